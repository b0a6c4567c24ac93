// libibverbs, loaded at run time. coll never links it: a machine without
// rdma-core runs the other transports as before, and the ib transport says
// why it is off. Symbols are looked up with their versions (dlvsym), as NCCL
// does, so that an old or a future libibverbs gives the ABI we compiled for.
// The data path (post, poll) is inline: rdma-core dispatches it through the
// context's ops table, which needs no symbol at all.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace coll::transport::ib {

struct Verbs {
  ibv_device** (*get_device_list)(int* num);
  void (*free_device_list)(ibv_device** list);
  const char* (*get_device_name)(ibv_device* device);
  ibv_context* (*open_device)(ibv_device* device);
  int (*close_device)(ibv_context* context);
  int (*query_device)(ibv_context* context, ibv_device_attr* attr);
  int (*query_port_compat)(ibv_context* context, uint8_t port, ibv_port_attr* attr);
  int (*query_gid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid);
  // rdma-core 30 and later (IBVERBS_1.11); null before.
  int (*query_gid_ex)(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry, uint32_t flags,
                      size_t entry_size);
  ibv_pd* (*alloc_pd)(ibv_context* context);
  int (*dealloc_pd)(ibv_pd* pd);
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t length, int access);
  int (*dereg_mr)(ibv_mr* mr);
  ibv_cq* (*create_cq)(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int vector);
  int (*destroy_cq)(ibv_cq* cq);
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  int (*destroy_qp)(ibv_qp* qp);
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask);
  int (*get_async_event)(ibv_context* context, ibv_async_event* event);
  void (*ack_async_event)(ibv_async_event* event);
  const char* (*event_type_str)(ibv_event_type type);
  const char* (*wc_status_str)(ibv_wc_status status);
};

// The loaded library, or null with the reason in *why (no libibverbs.so.1,
// a symbol missing). Loaded once per process; never unloaded.
const Verbs* load_verbs(std::string* why);

// The port's attributes, through the provider's own query where it has one
// (what rdma-core's inline ibv_query_port does), else the library's.
int query_port(const Verbs& v, ibv_context* context, uint8_t port, ibv_port_attr* attr);

inline int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) { return qp->context->ops.post_send(qp, wr, bad); }
inline int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) { return qp->context->ops.post_recv(qp, wr, bad); }
inline int poll_cq(ibv_cq* cq, int entries, ibv_wc* wc) { return cq->context->ops.poll_cq(cq, entries, wc); }

}  // namespace coll::transport::ib
