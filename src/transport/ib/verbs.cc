#include "transport/ib/verbs.h"

#include "base/error.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

namespace coll::transport::ib {
namespace {

// Every symbol is looked up at IBVERBS_1.1, the ABI since rdma-core's
// first release; query_gid_ex is newer and optional.
template <typename F>
bool resolve(void* lib, const char* name, const char* version, F* out, std::string* missing) {
  void* sym = dlvsym(lib, name, version);
  if (sym == nullptr) {
    *missing += str_cat(missing->empty() ? "" : ", ", name, "@", version);
    return false;
  }
  *out = reinterpret_cast<F>(sym);
  return true;
}

struct Loaded {
  Verbs verbs{};
  std::string why;  // empty when loaded
};

Loaded load() {
  Loaded out;
  // RTLD_NODELETE: providers hold pointers into it for the process's life.
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (lib == nullptr) {
    const char* err = dlerror();
    out.why = str_cat("cannot load libibverbs.so.1 (", err ? err : "?",
                      "): install rdma-core's libibverbs1 and a provider (ibverbs-providers)");
    return out;
  }
  Verbs& v = out.verbs;
  std::string missing;
  const char* k = "IBVERBS_1.1";
  resolve(lib, "ibv_get_device_list", k, &v.get_device_list, &missing);
  resolve(lib, "ibv_free_device_list", k, &v.free_device_list, &missing);
  resolve(lib, "ibv_get_device_name", k, &v.get_device_name, &missing);
  resolve(lib, "ibv_open_device", k, &v.open_device, &missing);
  resolve(lib, "ibv_close_device", k, &v.close_device, &missing);
  resolve(lib, "ibv_query_device", k, &v.query_device, &missing);
  resolve(lib, "ibv_query_port", k, &v.query_port_compat, &missing);
  resolve(lib, "ibv_query_gid", k, &v.query_gid, &missing);
  resolve(lib, "ibv_alloc_pd", k, &v.alloc_pd, &missing);
  resolve(lib, "ibv_dealloc_pd", k, &v.dealloc_pd, &missing);
  resolve(lib, "ibv_reg_mr", k, &v.reg_mr, &missing);
  resolve(lib, "ibv_dereg_mr", k, &v.dereg_mr, &missing);
  resolve(lib, "ibv_create_cq", k, &v.create_cq, &missing);
  resolve(lib, "ibv_destroy_cq", k, &v.destroy_cq, &missing);
  resolve(lib, "ibv_create_qp", k, &v.create_qp, &missing);
  resolve(lib, "ibv_destroy_qp", k, &v.destroy_qp, &missing);
  resolve(lib, "ibv_modify_qp", k, &v.modify_qp, &missing);
  resolve(lib, "ibv_get_async_event", k, &v.get_async_event, &missing);
  resolve(lib, "ibv_ack_async_event", k, &v.ack_async_event, &missing);
  resolve(lib, "ibv_event_type_str", k, &v.event_type_str, &missing);
  resolve(lib, "ibv_wc_status_str", k, &v.wc_status_str, &missing);
  if (!missing.empty()) {
    out.why = str_cat("libibverbs.so.1 lacks ", missing, ": rdma-core is too old or not rdma-core");
    return out;
  }
  std::string optional;
  resolve(lib, "_ibv_query_gid_ex", "IBVERBS_1.11", &v.query_gid_ex, &optional);
  return out;
}

}  // namespace

const Verbs* load_verbs(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.why.empty()) {
    if (why != nullptr) *why = loaded.why;
    return nullptr;
  }
  return &loaded.verbs;
}

int query_port(const Verbs& v, ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  verbs_context* vctx = verbs_get_ctx_op(context, query_port);
  if (vctx != nullptr) return vctx->query_port(context, port, attr, sizeof(*attr));
  std::memset(attr, 0, sizeof(*attr));
  return v.query_port_compat(context, port, attr);
}

}  // namespace coll::transport::ib
