#include "broker/handover.h"

#include <sys/mman.h>

#include "base/strings.h"
#include "persistent/protocol.h"
#include "sys/tree.h"

namespace pp::broker {

Result<Handover> Handover::receive(const persistent::RunDir& dir, sys::Kernel& kernel) {
  PP_ASSIGN_OR_RETURN(persistent::BrokerConnection connection,
                      persistent::BrokerConnection::connect(dir));
  // The token only the run directory's owner reads (the broker's uid).
  size_t slash = dir.handover_token().rfind('/');
  auto token = sys::Tree(dir.handover_token().substr(0, slash))
                   .read(dir.handover_token().substr(slash + 1), 4096);
  // A broker from before the token wrote none, and asks for none.
  if (!token.ok() && token.error().code() != ENOENT)
    return token.error().with_context(
        "reading the handover token (run the new broker as the running broker's user)");
  Handover handover(std::move(connection));
  persistent::Request request;
  request.op = persistent::Op::kHandover;
  request.token = token.ok() ? std::string(trim(*token)) : std::string();
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
  return int(pid);
}

Result<sys::Fd> Handover::take_listener() {
  if (!connection_)
    return Error(ENOTCONN, "the handover's connection is closed");
  persistent::Request request;
  request.op = persistent::Op::kHandoverListener;
  std::vector<sys::Fd> received;
  if (auto reply = connection_->call(request, &received); !reply.ok())
    return reply.error();
  connection_.reset();
  if (received.size() != 1)
    return errorf(EPROTO, "the broker's handover-listener reply carries %zu descriptors, not 1",
                  received.size());
  return std::move(received[0]);
}

}  // namespace pp::broker
