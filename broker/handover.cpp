#include "broker/handover.h"

#include <sys/mman.h>

#include "persistent/protocol.h"

namespace pp::broker {

Result<Handover> Handover::receive(const persistent::RunDir& dir, sys::Kernel& kernel) {
  PP_ASSIGN_OR_RETURN(persistent::BrokerConnection connection,
                      persistent::BrokerConnection::connect(dir));
  Handover handover(std::move(connection));
  persistent::Request request;
  request.op = persistent::Op::kHandover;
  for (;;) {
    std::vector<sys::Fd> fds;
    PP_ASSIGN_OR_RETURN(json body, handover.connection_->call(request, &fds));
    JsonFields f(body, "the broker's handover reply");
    PP_ASSIGN_OR_RETURN(const json* items, f.array("fds"));
    PP_ASSIGN_OR_RETURN(bool more, f.boolean_or("more", false));
    if (items->size() != fds.size())
      return errorf(EPROTO, "the broker's handover reply names %zu descriptors and carries %zu",
                    items->size(), fds.size());
    for (size_t i = 0; i < fds.size(); i++) {
      JsonFields item((*items)[i], "the broker's handover reply");
      PP_ASSIGN_OR_RETURN(std::string name, item.str("name"));
      PP_ASSIGN_OR_RETURN(uint64_t bytes, item.u64("mmap_bytes"));
      if (bytes > 0) {
        // Mapped before the old broker goes: the buffer never loses its
        // last mapping, so the kernel keeps its samples.
        auto mapping = kernel.mmap(fds[i].get(), size_t(bytes), PROT_READ);
        if (!mapping.ok())
          return mapping.error().with_context("mapping the buffer " + name + " handed over");
        handover.mappings.push_back(std::move(*mapping));
        handover.events++;
      }
      handover.fds.push_back({std::move(name), std::move(fds[i])});
    }
    if (!more)
      return handover;
    if (items->empty())
      return Error(EPROTO, "the broker's handover reply says there is more but holds nothing");
    request.after += items->size();
  }
}

Result<int> Handover::finish() {
  persistent::Request request;
  request.op = persistent::Op::kHandoverDone;
  PP_ASSIGN_OR_RETURN(json body, connection_->call(request));
  PP_ASSIGN_OR_RETURN(int64_t pid, JsonFields(body, "the broker's handover-done reply").i64("pid"));
  connection_.reset();
  return int(pid);
}

}  // namespace pp::broker
