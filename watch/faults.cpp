#include "watch/faults.h"

#include "base/wall_time.h"
#include "mce/decode.h"
#include "mce/edac.h"

namespace pp::watch {

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
  auto m = record.find("mce");
  if (m == record.end() || !m->is_object())
    return std::nullopt;
  auto cls = m->find("error_class");
  if (cls == m->end() || !cls->is_string() || cls->get<std::string>() != "memory-controller")
    return std::nullopt;
  mce::MceFromJson r = mce::mce_registers_from_json(*m);
  constexpr uint64_t kAddrv = 1ull << 58, kUc = 1ull << 61;
  if (!r.regs.addr || !r.regs.status || !(*r.regs.status & kAddrv))
    return std::nullopt;
  e.machine_check = true;
  e.location.address = r.regs.addr;
  e.location.page = *r.regs.addr >> 12;
  e.uncorrected = (*r.regs.status & kUc) != 0;
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
  return mce::group_faults(mce::join_machine_checks(std::move(errors), kEdacJoinWindowNs));
}

}  // namespace pp::watch
