#include "watch/faults.h"

#include "base/wall_time.h"
#include "mce/decode.h"
#include "mce/edac.h"
#include "mce/severity.h"
#include "watch/record.h"

namespace pp::watch {

std::optional<mce::MceDecoded> stored_mce(const nlohmann::ordered_json& record) {
  auto it = record.find("mce");
  if (it == record.end() || !it->is_object())
    return std::nullopt;
  mce::MceFromJson m = mce::mce_registers_from_json(*it);
  mce::MceDecoded d = mce::decode_mce(m.regs, m.vendor);
  auto origin = record.find("origin");
  std::string o = origin != record.end() && origin->is_string() ? origin->get<std::string>() : "";
  if (o == origin_name(Origin::kLive) || o == origin_name(Origin::kPreviousBoot)) {
    mce::set_mce_origin(d, mce::MceOrigin::kTracepoint);
  } else if (o == origin_name(Origin::kKmsg) || o == origin_name(Origin::kPstore) ||
             o == origin_name(Origin::kErst)) {
    mce::set_mce_origin(d, mce::MceOrigin::kKernelLog);
    auto fields = record.find("fields");
    if (fields != record.end() && fields->is_object()) {
      auto message = fields->find("kernel_message");
      if (message != fields->end() && message->is_string())
        mce::apply_kernel_verdict(d, message->get<std::string>());
    }
  }
  return d;
}

std::optional<mce::FaultError> fault_error_of(const nlohmann::ordered_json& record) {
  if (!record.is_object())
    return std::nullopt;
  mce::FaultError e;
  if (auto t = record.find("wall_time"); t != record.end() && t->is_string()) {
    if (auto ns = parse_wall_time(t->get<std::string>()); ns.ok())
      e.wall_ns = *ns;
  }
  auto tp = record.find("tracepoint");
  std::string tracepoint = tp != record.end() && tp->is_string() ? tp->get<std::string>() : "";
  if (tracepoint == "ras:mc_event") {
    auto fields = record.find("fields");
    if (fields == record.end())
      return std::nullopt;
    mce::McEventFields f = mce::mc_event_fields_from_json(*fields);
    mce::EdacError d = mce::decode_mc_event(f);
    e.location = d.location;
    e.count = d.count ? d.count : 1;
    e.uncorrected = d.type != mce::EdacErrorType::kCorrected;
    return e;
  }
  std::optional<mce::MceDecoded> d = stored_mce(record);
  if (!d)
    return std::nullopt;
  constexpr uint64_t kAddrv = 1ull << 58, kUc = 1ull << 61;
  const uint64_t status = d->regs.status.value_or(0);
  const bool addrv = d->regs.addr && (status & kAddrv);
  if (std::optional<mce::MemoryLocation> located = mce::memory_location(*d)) {
    e.location = *located;
  } else if (d->error_code.error_class == mce::McaErrorClass::kMemoryController && addrv) {
    e.location = {};
  } else {
    return std::nullopt;
  }
  if (addrv && !e.location.address) {
    e.location.address = d->regs.addr;
    e.location.page = *d->regs.addr >> 12;
  }
  e.machine_check = true;
  e.uncorrected = (status & kUc) != 0;
  e.mce = std::make_shared<const mce::MceDecoded>(std::move(*d));
  return e;
}

std::vector<mce::Fault> faults_of(const std::vector<nlohmann::ordered_json>& records) {
  std::vector<mce::FaultError> errors;
  for (const nlohmann::ordered_json& r : records)
    if (auto e = fault_error_of(r))
      errors.push_back(std::move(*e));
  return faults_of(std::move(errors));
}

std::vector<mce::Fault> faults_of(std::vector<mce::FaultError> errors) {
  return mce::group_faults(
      mce::label_machine_checks(mce::join_machine_checks(std::move(errors), kEdacJoinWindowNs)));
}

}  // namespace pp::watch
