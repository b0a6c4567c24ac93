// mpi_perf — the coll_perf table for Open MPI's collectives (MPI_Allreduce,
// MPI_Bcast, MPI_Reduce, MPI_Allgather, MPI_Reduce_scatter_block,
// MPI_Alltoall), with the same flags, the same inputs and the same exact
// check, so that the two tables compare row by row.
//
//   mpirun -np 2 mpi_perf -b 8 -e 64M -f 4
//
// MPI has no float16/bfloat16 in Open MPI 4.1 and no AVG: those are refused.
// In place follows MPI_IN_PLACE; for reduce_scatter MPI leaves our block at
// the start of the buffer, so it is moved to where NCCL (and coll) put it —
// a copy of one block, inside the timed call.
#include "perf_common.h"
#include "perf_ops.h"

#include <mpi.h>

#include <cstring>

namespace {

MPI_Datatype mpi_type(coll_datatype_t t) {
  switch (t) {
    case COLL_INT8:
      return MPI_INT8_T;
    case COLL_UINT8:
      return MPI_UINT8_T;
    case COLL_INT32:
      return MPI_INT32_T;
    case COLL_UINT32:
      return MPI_UINT32_T;
    case COLL_INT64:
      return MPI_INT64_T;
    case COLL_UINT64:
      return MPI_UINT64_T;
    case COLL_FLOAT32:
      return MPI_FLOAT;
    case COLL_FLOAT64:
      return MPI_DOUBLE;
    default:
      perf::die(std::string(coll::reduce::datatype_name(t)) + " has no MPI datatype in Open MPI 4.1");
  }
}

MPI_Op mpi_op(coll_redop_t op) {
  switch (op) {
    case COLL_SUM:
      return MPI_SUM;
    case COLL_PROD:
      return MPI_PROD;
    case COLL_MIN:
      return MPI_MIN;
    case COLL_MAX:
      return MPI_MAX;
    default:
      perf::die("MPI has no 'avg' reduction");
  }
}

void ok(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  std::fprintf(stderr, "mpi_perf: %s failed (%d)\n", what, rc);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

struct Mpi {
  std::string collective;
  MPI_Datatype type;
  MPI_Op op;

  void run(const perf::Case& c) {
    const int n = static_cast<int>(c.count), part = static_cast<int>(c.part());
    const size_t block = c.part() * c.es();
    if (collective == "allreduce") {
      ok(MPI_Allreduce(c.in_place ? MPI_IN_PLACE : c.send, c.in_place ? c.send : c.recv, n, type, op, MPI_COMM_WORLD),
         "MPI_Allreduce");
    } else if (collective == "broadcast") {
      ok(MPI_Bcast(c.recv, n, type, c.root, MPI_COMM_WORLD), "MPI_Bcast");
    } else if (collective == "reduce") {
      char* out = c.in_place ? c.send : c.recv;
      const void* in = c.in_place && c.rank == c.root ? MPI_IN_PLACE : c.send;
      ok(MPI_Reduce(in, out, n, type, op, c.root, MPI_COMM_WORLD), "MPI_Reduce");
    } else if (collective == "allgather") {
      const void* in = c.in_place ? MPI_IN_PLACE : c.send;
      ok(MPI_Allgather(in, part, type, c.recv, part, type, MPI_COMM_WORLD), "MPI_Allgather");
    } else if (collective == "reduce_scatter") {
      if (c.in_place) {
        ok(MPI_Reduce_scatter_block(MPI_IN_PLACE, c.send, part, type, op, MPI_COMM_WORLD), "MPI_Reduce_scatter_block");
        std::memmove(c.send + c.rank * block, c.send, block);
      } else {
        ok(MPI_Reduce_scatter_block(c.send, c.recv, part, type, op, MPI_COMM_WORLD), "MPI_Reduce_scatter_block");
      }
    } else if (collective == "sendrecv") {
      const int next = (c.rank + 1) % c.n, prev = (c.rank + c.n - 1) % c.n;
      ok(MPI_Sendrecv(c.send, n, type, next, 0, c.recv, n, type, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
         "MPI_Sendrecv");
    } else {
      const void* in = c.in_place ? MPI_IN_PLACE : c.send;
      ok(MPI_Alltoall(in, part, type, c.in_place ? c.send : c.recv, part, type, MPI_COMM_WORLD), "MPI_Alltoall");
    }
  }
  void barrier() { ok(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  void sum(uint64_t& v) { ok(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD), "sum"); }
  void max(double& v) { ok(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "max"); }
};

}  // namespace

int main(int argc, char** argv) {
  perf::program_name() = "mpi_perf";
  MPI_Init(&argc, &argv);
  perf::Options o = perf::parse(argc, argv);
  const perf::Ops& ops = *perf::find(o.collective);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (ops.rooted && (o.root < 0 || o.root >= nranks)) perf::die("-r " + std::to_string(o.root) + " is not a rank");
  const bool reduces = o.collective == "allreduce" || o.collective == "reduce" || o.collective == "reduce_scatter";
  Mpi lib{o.collective, mpi_type(o.dtype), reduces ? mpi_op(o.op) : MPI_SUM};
  size_t wrong = perf::sweep(o, ops, rank, nranks, nullptr, lib, "Open MPI");
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
