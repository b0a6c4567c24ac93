/*
 * coll.h — the stable C ABI of coll, a collective communication library.
 *
 * This is the only header a framework needs. Every function returns a
 * coll_result_t unless noted; on failure, coll_get_last_error() gives a
 * message that names the argument, rank, peer, syscall and errno involved.
 *
 * Thread safety: functions that take a communicator may be called from any
 * thread, but a communicator must not be used by two threads at the same
 * time (as in NCCL and MPI_THREAD_SERIALIZED): a second thread's call is
 * refused with COLL_INVALID_USAGE. Functions without a communicator
 * argument are thread-safe.
 *
 * Which errors leave a communicator usable:
 *   COLL_INVALID_ARGUMENT  usable: the call was refused before any data moved.
 *   COLL_INVALID_USAGE     usable where the call was refused before any data
 *                          moved (the header says which refusals are so);
 *                          not usable where an operation ran and the ranks
 *                          disagreed (a count, a datatype, an order).
 *   COLL_SYSTEM_ERROR, COLL_REMOTE_ERROR, COLL_TIMEOUT, COLL_INTERNAL_ERROR:
 *                          not usable: call coll_comm_abort() or
 *                          coll_comm_destroy() and build a new communicator.
 *   COLL_REVOKED           not usable but for coll_comm_agree and
 *                          coll_comm_shrink, on every rank (coll_comm_revoke).
 *
 * Licensed under the Apache License, Version 2.0.
 */
#ifndef COLL_COLL_H_
#define COLL_COLL_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define COLL_API __attribute__((visibility("default")))
#else
#define COLL_API
#endif

/* Version as major * 10000 + minor * 100 + patch. */
#define COLL_VERSION_MAJOR 0
#define COLL_VERSION_MINOR 1
#define COLL_VERSION_PATCH 0
#define COLL_VERSION_CODE (COLL_VERSION_MAJOR * 10000 + COLL_VERSION_MINOR * 100 + COLL_VERSION_PATCH)

/* Result codes. Values are part of the ABI and never change. */
typedef enum {
  COLL_SUCCESS = 0,
  COLL_INVALID_ARGUMENT = 1,                /* a bad argument: null pointer, unknown dtype, rank out of range */
  COLL_INVALID_USAGE = 2,                   /* a legal argument used wrongly: ranks disagree, destroyed comm */
  COLL_SYSTEM_ERROR = 3,                    /* a system call failed (socket, memory); the message has errno */
  COLL_REMOTE_ERROR = 4,                    /* a peer closed its connection, died, or reported an error */
  COLL_TIMEOUT = 5,                         /* COLL_TIMEOUT_MS passed while waiting for a peer */
  COLL_INTERNAL_ERROR = 6,                  /* a bug in coll: please report it with the message */
  COLL_IN_PROGRESS = 7,                     /* a non-blocking operation has not finished yet */
  COLL_REVOKED = 8,                         /* a rank revoked the communicator (coll_comm_revoke): shrink it */
  COLL_RESULT_RANGE_MIN_ = -2147483647 - 1, /* not codes: as for coll_datatype_t */
  COLL_RESULT_RANGE_MAX_ = 2147483647
} coll_result_t;

/* Element types. float16 is IEEE 754 binary16; bfloat16 is the top half of a float32. */
typedef enum {
  COLL_INT8 = 0,
  COLL_UINT8 = 1,
  COLL_INT32 = 2,
  COLL_UINT32 = 3,
  COLL_INT64 = 4,
  COLL_UINT64 = 5,
  COLL_FLOAT16 = 6,
  COLL_BFLOAT16 = 7,
  COLL_FLOAT32 = 8,
  COLL_FLOAT64 = 9,
  COLL_NUM_DATATYPES = 10,
  /* Not types: they give the enum the range of int, so that any int a
   * caller passes is a value the library can check and refuse. */
  COLL_DATATYPE_RANGE_MIN_ = -2147483647 - 1,
  COLL_DATATYPE_RANGE_MAX_ = 2147483647
} coll_datatype_t;

/* Reduction operations. COLL_AVG sums, then divides once by the number of
 * ranks (integer types truncate toward zero), as NCCL's does for integers:
 * a sum that leaves the type's range wraps (integers) or is infinite
 * (float16 past 65504) before the division. Integer SUM and PROD wrap
 * modulo 2^bits, so their result does not depend on the reduction order. */
typedef enum {
  COLL_SUM = 0,
  COLL_PROD = 1,
  COLL_MIN = 2,
  COLL_MAX = 3,
  COLL_AVG = 4,
  COLL_NUM_REDOPS = 5,
  COLL_REDOP_RANGE_MIN_ = -2147483647 - 1, /* not ops: as for coll_datatype_t */
  COLL_REDOP_RANGE_MAX_ = 2147483647
} coll_redop_t;

/* An opaque communicator: a group of ranks that run collectives together. */
typedef struct coll_comm* coll_comm_t;

/* An opaque stream. Null means host memory: the call returns when the result
 * is complete in the output buffer. (A CUDA stream in GPU builds.) */
typedef void* coll_stream_t;

/* Identifies one job's rendezvous: the address and port of the bootstrap
 * store and a 128-bit random job secret. Treat it as a secret: anyone holding
 * it can join the job. Copy it by value to the other ranks (MPI_Bcast, a file,
 * an environment variable). */
#define COLL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[COLL_UNIQUE_ID_BYTES];
} coll_unique_id_t;

/* Writes COLL_VERSION_CODE of the library actually loaded into *version. */
COLL_API coll_result_t coll_get_version(int* version);

/* Creates a new job identity and starts the bootstrap store in the calling
 * process, which must stay alive until every rank has called
 * coll_comm_init_rank (usually the caller is rank 0). The store listens on the
 * interface chosen by COLL_SOCKET_IFNAME. */
COLL_API coll_result_t coll_get_unique_id(coll_unique_id_t* id);

/* Creates the communicator of rank `rank` in a group of `nranks` ranks.
 * Collective: every rank 0..nranks-1 must call it with the same id; it
 * returns when all have arrived and are connected, or COLL_TIMEOUT after
 * COLL_TIMEOUT_MS. On success *comm is owned by the caller: release it with
 * coll_comm_destroy(). */
COLL_API coll_result_t coll_comm_init_rank(coll_comm_t* comm, int nranks, coll_unique_id_t id, int rank);

/* Per-communicator settings. Initialise with COLL_CONFIG_INIT, then set the
 * fields you want: a zero field keeps its default, so that programs built
 * against an older coll.h (a smaller struct, told by `size`) still work. */
typedef struct {
  size_t size;         /* sizeof(coll_config_t): set by COLL_CONFIG_INIT */
  int timeout_ms;      /* longest wait for a peer in any call of this communicator;
                          0: COLL_TIMEOUT_MS (default 10 minutes) */
  int init_timeout_ms; /* longest wait for every rank to join (this call);
                          0: COLL_INIT_TIMEOUT_MS, or, unset, the larger of
                          timeout_ms and 10 minutes */
} coll_config_t;
#define COLL_CONFIG_INIT \
  { sizeof(coll_config_t), 0, 0 }

/* coll_comm_init_rank with settings; a null config is the defaults. */
COLL_API coll_result_t coll_comm_init_rank_config(coll_comm_t* comm, int nranks, coll_unique_id_t id, int rank,
                                                  const coll_config_t* config);

/* Like coll_comm_init_rank, with rank, size and rendezvous read from the
 * environment, in this order: collrun (COLL_RANK, COLL_NRANKS,
 * COLL_ROOT_ADDR, COLL_JOB_SECRET); torchrun (RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT); Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) and
 * Slurm (SLURM_PROCID, SLURM_NTASKS), whose unique id travels by MPI_Bcast in
 * builds with MPI. COLL_INVALID_USAGE if none is found. A spare (COLL_SPARE
 * set by the launcher, as collrun --spares does, with COLL_SPARES_DIR) waits
 * here, without limit, until a communicator grows (coll_comm_grow), and joins
 * it at the first seat offered; if that growth fails, it waits for the next. */
COLL_API coll_result_t coll_comm_init_from_env(coll_comm_t* comm);

/* Releases the communicator: closes connections, frees memory. It waits for
 * no peer, but for this rank's non-blocking operations still running, as
 * ncclCommDestroy and MPI_Comm_free do (each ends at the latest at its
 * timeout); call coll_comm_abort first to end them at once. Every rank
 * should call it. A null comm is COLL_INVALID_ARGUMENT; a call while
 * another thread is inside an operation on comm is COLL_INVALID_USAGE
 * (abort, then destroy once that operation has returned). The calls any
 * thread may make (abort, revoke, coll_comm_get_async_error, rank, size)
 * finish first, and are COLL_INVALID_USAGE once a destroy has begun.
 * Any later call with the handle is COLL_INVALID_USAGE (the most recent
 * 4096 destroyed handles are remembered; the message is in
 * coll_get_last_error(NULL)). */
COLL_API coll_result_t coll_comm_destroy(coll_comm_t comm);

/* Marks the communicator as failed and closes its connections, so that peers
 * blocked on this rank see COLL_REMOTE_ERROR instead of waiting for the
 * timeout. May be called from any thread, also while another thread is
 * inside an operation on comm: that operation, and every queued
 * non-blocking one, then ends within 100 ms with COLL_INVALID_USAGE. Later
 * calls are refused with COLL_INVALID_USAGE (coll_comm_shrink excepted).
 * The handle must still be released with coll_comm_destroy(). */
COLL_API coll_result_t coll_comm_abort(coll_comm_t comm);

/* As ULFM's MPI_Comm_revoke: a rank that found a failure stops the others
 * from waiting out their timeouts. The operation in progress on comm (from
 * another thread) and every queued one end with COLL_REVOKED here; every
 * other rank's pending operations on comm end with COLL_REVOKED as soon as
 * the word reaches it, from this rank or from any rank that already has it,
 * and so do all later calls on comm on every rank (coll_comm_shrink
 * excepted, which is what to call next). Revoking twice, or a communicator
 * already revoked by another rank, is no error. May be called from any
 * thread. The handle must still be released with coll_comm_destroy(). */
COLL_API coll_result_t coll_comm_revoke(coll_comm_t comm);

/* Writes into *error the first failure of any operation on comm, blocking or
 * non-blocking (a dead peer, a timeout, ranks that disagree), or
 * COLL_SUCCESS while there was none; coll_get_last_error(comm) then has its
 * message. From any thread, without waiting: a watchdog thread may poll it. */
COLL_API coll_result_t coll_comm_get_async_error(coll_comm_t comm, coll_result_t* error);

/* Writes this process's rank (0-based) in the communicator. */
COLL_API coll_result_t coll_comm_rank(coll_comm_t comm, int* rank);

/* Writes the number of ranks in the communicator. */
COLL_API coll_result_t coll_comm_size(coll_comm_t comm, int* size);

/* recvbuf[i] = op over all ranks r of sendbuf_r[i], for i in [0, count).
 * sendbuf == recvbuf is in place; otherwise the two must not overlap.
 * count is in elements of `datatype`. Collective: every rank calls it with
 * the same count, datatype and op. With a null stream the call returns when
 * recvbuf holds the result. Buffers may be null only when count is 0. */
COLL_API coll_result_t coll_allreduce(const void* sendbuf, void* recvbuf, size_t count, coll_datatype_t datatype,
                                      coll_redop_t op, coll_comm_t comm, coll_stream_t stream);

/* ---------------------------------------------------------------------------
 * The collective family. Common rules:
 * - Counts are in elements of `datatype`; buffers are host memory (stream
 *   null). A buffer may be null only when its count is 0 or the rank does not
 *   use it (the recvbuf of coll_reduce on a non-root rank).
 * - Collective calls must be made by every rank of the communicator in the
 *   same order with the same count, datatype, op and root; a mismatch in
 *   size is COLL_INVALID_USAGE on the ranks that see it.
 * - In place is as in NCCL: allreduce, reduce, alltoall: sendbuf == recvbuf;
 *   allgather: sendbuf == recvbuf + rank * sendcount elements; reduce_scatter:
 *   recvbuf == sendbuf + rank * recvcount elements. Any other overlap is
 *   COLL_INVALID_ARGUMENT.
 * - The algorithm comes from COLL_ALGO or the cost model (README, "Algorithms").
 * ------------------------------------------------------------------------- */

/* Copies `count` elements of root's buf into buf on every rank. */
COLL_API coll_result_t coll_broadcast(void* buf, size_t count, coll_datatype_t datatype, int root, coll_comm_t comm,
                                      coll_stream_t stream);

/* recvbuf on rank `root` = op over all ranks of sendbuf; recvbuf is not used elsewhere. */
COLL_API coll_result_t coll_reduce(const void* sendbuf, void* recvbuf, size_t count, coll_datatype_t datatype,
                                   coll_redop_t op, int root, coll_comm_t comm, coll_stream_t stream);

/* recvbuf (nranks * sendcount elements) = every rank's sendbuf, in rank order. */
COLL_API coll_result_t coll_allgather(const void* sendbuf, void* recvbuf, size_t sendcount, coll_datatype_t datatype,
                                      coll_comm_t comm, coll_stream_t stream);

/* sendbuf holds nranks blocks of recvcount elements; recvbuf on rank r =
 * op over all ranks of their block r. */
COLL_API coll_result_t coll_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                           coll_datatype_t datatype, coll_redop_t op, coll_comm_t comm,
                                           coll_stream_t stream);

/* Block p (count elements) of sendbuf goes to rank p; block p of recvbuf comes from rank p. */
COLL_API coll_result_t coll_alltoall(const void* sendbuf, void* recvbuf, size_t count, coll_datatype_t datatype,
                                     coll_comm_t comm, coll_stream_t stream);

/* Point to point. The messages from one rank to another match in the order
 * the sender posted them with the receives in the order the receiver posted
 * them (MPI's non-overtaking rule); a receive's count and datatype must equal
 * its send's, else COLL_INVALID_USAGE on the receiver, and on the sender at
 * its next operation that waits on that rank (as for the root of a
 * broadcast, which only sends). Either side may be in a group or not,
 * blocking or not: a group changes nothing on the wire. A blocking
 * send or receive returns when its buffer may be reused; it blocks until the
 * peer posts the matching call, so pairs that cross go in one group, or
 * non-blocking. A message to this rank itself (peer == rank) is a copy: it
 * needs its counterpart in the same group, or issued non-blocking before a
 * blocking one; a blocking one with nothing pending to answer it is
 * COLL_INVALID_USAGE at once, and the communicator stays usable. A peer
 * outside [0, nranks) is COLL_INVALID_ARGUMENT. */
COLL_API coll_result_t coll_send(const void* buf, size_t count, coll_datatype_t datatype, int peer, coll_comm_t comm,
                                 coll_stream_t stream);
COLL_API coll_result_t coll_recv(void* buf, size_t count, coll_datatype_t datatype, int peer, coll_comm_t comm,
                                 coll_stream_t stream);

/* Returns once every rank of the communicator has entered the barrier. */
COLL_API coll_result_t coll_barrier(coll_comm_t comm);

/* Groups: calls between coll_group_start and coll_group_end (per thread,
 * nestable) are only recorded; coll_group_end runs them together, per
 * communicator (as ncclGroupStart/End):
 * - its collectives must be the same, in the same order, on every rank;
 * - its sends and receives are matched apart from the collectives, whatever
 *   order each rank interleaves them with the collectives in, and never
 *   deadlock whatever their order; ranks may group different ones, and a
 *   grouped send may meet a receive outside any group;
 * - a group that its peer finds wrong (a count that differs) is
 *   COLL_INVALID_USAGE on that peer, and on this rank at the latest at its
 *   next operation that waits on the peer.
 * Errors of recorded calls' arguments are returned at once, and then
 * nothing in the group runs: coll_group_end returns the first such error
 * (as in NCCL: run without the refused call, the group's later calls would
 * meet the peers' instances of it). Errors of their execution are
 * coll_group_end's. A message to this rank itself without its
 * counterpart in the group, or with another count or datatype, is
 * COLL_INVALID_USAGE from coll_group_end before anything moves, on any of
 * the group's communicators (each stays usable). A non-blocking call
 * inside a group is COLL_INVALID_USAGE (and is not recorded);
 * coll_group_end without coll_group_start is COLL_INVALID_USAGE. */
COLL_API coll_result_t coll_group_start(void);
COLL_API coll_result_t coll_group_end(void);

/* Collective over comm: ranks passing the same color form *newcomm, ranked
 * by key (ties by rank in comm). COLL_SPLIT_NOCOLOR gives *newcomm = NULL.
 * The new communicator is independent (its own connections): collectives on
 * it and on comm may be in flight at the same time. Destroy it separately:
 * it outlives comm (destroying comm first leaves it usable, its own splits
 * included), as long as the process that holds the job's bootstrap store
 * (the one that made the unique id) runs, as every communicator of the job
 * needs. */
#define COLL_SPLIT_NOCOLOR (-1)
COLL_API coll_result_t coll_comm_split(coll_comm_t comm, int color, int key, coll_comm_t* newcomm);

/* The survivors of a failure go on without the dead: every rank that is not
 * in exclude_ranks[0..n) calls it (the excluded do not), also on a
 * communicator whose operations failed or that was aborted, and they form
 * *newcomm, in their old order (old rank 3 of 0..3 without 2 becomes 2).
 * As ULFM's MPI_Comm_shrink, the survivors agree on who is gone: the union
 * of their exclusion lists, the ranks found gone (a process that exited,
 * was killed or crashed: found in about 100 ms, so exclude_ranks may be
 * NULL with n = 0), and any rank that does not arrive within the timeout
 * (a node that went silent, unless named). The rendezvous needs no store of
 * the old communicator (rank 0 may be the dead one). A survivor that another
 * excluded gets COLL_INVALID_USAGE; an excluded rank outside [0, nranks), or
 * this rank itself, is COLL_INVALID_ARGUMENT. If the host of the meeting
 * dies after deciding and a rank it had let in does not reach the next
 * host, no communicator is formed: COLL_REMOTE_ERROR on every survivor.
 * A shrink that failed because a rank died while the members joined fails
 * so on every survivor alike, and may be called again on the same
 * communicator. The old communicator must still be destroyed. */
COLL_API coll_result_t coll_comm_shrink(coll_comm_t comm, const int* exclude_ranks, int n, coll_comm_t* newcomm);

/* New ranks join: as NCCL's ncclCommGrow. Rank 0 of comm gets an id with
 * coll_get_unique_id (its process then serves the new job's store) and gives
 * it to the nnew new ranks by any means; they call
 * coll_comm_init_rank(&c, size + nnew, id, r) with r in [size, size + nnew),
 * and every member calls coll_comm_grow(comm, nnew, &id, &newcomm) (id is
 * read on rank 0 only; the others may pass NULL). *newcomm holds the members
 * first, each keeping its rank, then the new ranks. comm must be usable: after
 * a failure, shrink it first and grow the shrunk one (a replacement takes a
 * rank after the survivors; exchange who stands for whom on *newcomm). Under
 * a launcher that keeps spares (COLL_SPARES_DIR), rank 0 may pass id NULL:
 * coll makes one and the spares waiting in coll_comm_init_from_env take the
 * new ranks (a spare whose growth fails waits for the next). Members that
 * pass different nnew get COLL_INVALID_ARGUMENT, and the others, when rank 0
 * has no id, COLL_REMOTE_ERROR: all at once. A new rank that does not join
 * fails the growth on the others with COLL_TIMEOUT within comm's timeout,
 * naming it; a member that dies, at once with COLL_REMOTE_ERROR; and comm
 * stays as it was: the members agree (on comm) that every one of them has
 * the id, then that every one of them joined, or all fail and close their
 * new communicators, whose new ranks' calls then fail. A process with the wrong id
 * or secret is refused by the store and the others go on. comm must still
 * be destroyed. */
COLL_API coll_result_t coll_comm_grow(coll_comm_t comm, int nnew, const coll_unique_id_t* id, coll_comm_t* newcomm);

/* As ULFM's MPI_Comm_agree: every live rank calls it, also on a
 * communicator whose operations failed, that was aborted or revoked, and
 * every rank that returns COLL_SUCCESS gets in *flag the same bitwise AND
 * of the flags of the ranks that took part, even if ranks die during the
 * call. gone_ranks (room for the communicator's size; may be NULL, with
 * ngone NULL too) gets, in order, the ranks gone: found gone (about 100 ms
 * after a process dies) or not arrived within the timeout; *ngone their
 * number. The same list on every rank. A rank that arrives after the
 * decision still gets it, and finds itself among the gone. If the ranks'
 * host dies and the next one cannot be sure of what the dead host decided,
 * every rank there fails with COLL_REMOTE_ERROR rather than any deciding
 * anew. Every rank must call it as many times as the others. */
COLL_API coll_result_t coll_comm_agree(coll_comm_t comm, int* flag, int* gone_ranks, int* ngone);

/* ---------------------------------------------------------------------------
 * Non-blocking forms: same arguments, plus *request, which the call fills.
 * The operation runs in the background (a thread per communicator) while the
 * caller computes; buffers must stay untouched until it completes. Every
 * request must be completed with coll_wait or coll_test.
 * - Operations on one communicator run in the order they were issued,
 *   blocking ones included, with one exception: sends and receives issued
 *   one after another (non-blocking, and blocking ones issued after them)
 *   run together and each completes on its own, as MPI_Isend/MPI_Irecv, so
 *   that a rank may post its send before its receive, on every rank, and
 *   wait on both (a crossing exchange). Any other operation between them
 *   orders them: those before it complete before it starts.
 * - A null request pointer is COLL_INVALID_ARGUMENT; inside a group, a
 *   non-blocking call is COLL_INVALID_USAGE. A refused call sets *request
 *   to NULL.
 * ------------------------------------------------------------------------- */
typedef struct coll_request* coll_request_t;

COLL_API coll_result_t coll_allreduce_async(const void* sendbuf, void* recvbuf, size_t count, coll_datatype_t datatype,
                                            coll_redop_t op, coll_comm_t comm, coll_stream_t stream,
                                            coll_request_t* request);
COLL_API coll_result_t coll_broadcast_async(void* buf, size_t count, coll_datatype_t datatype, int root,
                                            coll_comm_t comm, coll_stream_t stream, coll_request_t* request);
COLL_API coll_result_t coll_reduce_async(const void* sendbuf, void* recvbuf, size_t count, coll_datatype_t datatype,
                                         coll_redop_t op, int root, coll_comm_t comm, coll_stream_t stream,
                                         coll_request_t* request);
COLL_API coll_result_t coll_allgather_async(const void* sendbuf, void* recvbuf, size_t sendcount,
                                            coll_datatype_t datatype, coll_comm_t comm, coll_stream_t stream,
                                            coll_request_t* request);
COLL_API coll_result_t coll_reduce_scatter_async(const void* sendbuf, void* recvbuf, size_t recvcount,
                                                 coll_datatype_t datatype, coll_redop_t op, coll_comm_t comm,
                                                 coll_stream_t stream, coll_request_t* request);
COLL_API coll_result_t coll_alltoall_async(const void* sendbuf, void* recvbuf, size_t count, coll_datatype_t datatype,
                                           coll_comm_t comm, coll_stream_t stream, coll_request_t* request);
COLL_API coll_result_t coll_send_async(const void* buf, size_t count, coll_datatype_t datatype, int peer,
                                       coll_comm_t comm, coll_stream_t stream, coll_request_t* request);
COLL_API coll_result_t coll_recv_async(void* buf, size_t count, coll_datatype_t datatype, int peer, coll_comm_t comm,
                                       coll_stream_t stream, coll_request_t* request);
COLL_API coll_result_t coll_barrier_async(coll_comm_t comm, coll_request_t* request);

/* Blocks until the operation completes; returns its result and releases the
 * request. On failure coll_get_last_error(comm) has the message. A request
 * released already is COLL_INVALID_USAGE (the most recent 4096 released are
 * remembered), a null one COLL_INVALID_ARGUMENT. */
COLL_API coll_result_t coll_wait(coll_request_t request);

/* COLL_IN_PROGRESS while the operation runs (the request stays valid);
 * otherwise its result, and the request is released (as by coll_wait). */
COLL_API coll_result_t coll_test(coll_request_t request);

/* ---------------------------------------------------------------------------
 * Buffers the ranks of a node share (as ncclMemAlloc). Memory from
 * coll_mem_alloc is ordinary host memory to the caller; large messages sent
 * from it to a rank on the same node are read by the receiver where they lie,
 * one copy instead of two (shared-memory transport; README, "Shared
 * buffers"). Any buffer argument of any collective may come from here, whole
 * or in part. Thread-safe; no communicator needed.
 * ------------------------------------------------------------------------- */

/* *ptr = `bytes` (> 0) of zeroed, page-aligned memory. COLL_SYSTEM_ERROR
 * when the system has none to give. */
COLL_API coll_result_t coll_mem_alloc(void** ptr, size_t bytes);

/* Releases memory from coll_mem_alloc (null is a no-op). A pointer that is
 * not one coll_mem_alloc returned is COLL_INVALID_ARGUMENT. Operations using
 * it must have completed. */
COLL_API coll_result_t coll_mem_free(void* ptr);

/* ---------------------------------------------------------------------------
 * Registered buffers (as ncclCommRegister). A framework that passes the same
 * buffers at every step (its gradients) registers them once: each of the
 * communicator's transports registers them with its fabric (memory
 * registration for RDMA) and keeps the registration, so that no operation
 * pays for it. Registering is never required: unregistered buffers work
 * everywhere. Calls are ordered with the communicator's operations (they
 * wait for the non-blocking ones issued before them).
 * ------------------------------------------------------------------------- */

/* *handle names the registration of [ptr, ptr + bytes) (bytes > 0); the same
 * range registered again is the same registration, counted.
 * COLL_INVALID_ARGUMENT for a null ptr or handle, or 0 bytes. Like the
 * collectives, not while another thread is inside a call on comm. */
COLL_API coll_result_t coll_comm_register(coll_comm_t comm, void* ptr, size_t bytes, void** handle);

/* Drops one count of a registration from coll_comm_register; its memory may
 * be freed once the count is 0. A handle that is not the communicator's, or
 * one released already, is COLL_INVALID_ARGUMENT. Destroying the
 * communicator drops every registration. */
COLL_API coll_result_t coll_comm_deregister(coll_comm_t comm, void* handle);

/* A static string naming the code, e.g. "COLL_TIMEOUT: timed out waiting for a peer".
 * Never null; unknown codes give "unknown coll_result_t". */
COLL_API const char* coll_get_error_string(coll_result_t result);

/* The message of the last failed call on `comm` by any thread, or of the last
 * failed call without a communicator (init, unique id) in the calling thread
 * when comm is null. Empty when nothing failed. The string is the calling
 * thread's own copy, valid until that thread's next call into coll: other
 * threads' calls do not change it. */
COLL_API const char* coll_get_last_error(coll_comm_t comm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* COLL_COLL_H_ */
