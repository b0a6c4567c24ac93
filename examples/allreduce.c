/* allreduce.c — the smallest coll program: every rank contributes rank+1,
 * and rank 0 prints the sum. Run it with: collrun -n 2 ./allreduce */
#include <coll/coll.h>
#include <stdio.h>

#define CHECK(call)                                                         \
  do {                                                                      \
    coll_result_t r_ = (call);                                              \
    if (r_ != COLL_SUCCESS) {                                               \
      fprintf(stderr, "%s failed: %s\n", #call, coll_get_last_error(comm)); \
      return 1;                                                             \
    }                                                                       \
  } while (0)

int main(void) {
  coll_comm_t comm = NULL; /* null: init errors are read from this thread */
  int rank, size;
  float data[4];

  CHECK(coll_comm_init_from_env(&comm));
  CHECK(coll_comm_rank(comm, &rank));
  CHECK(coll_comm_size(comm, &size));
  for (int i = 0; i < 4; ++i) data[i] = (float)(rank + 1);

  /* In place: sendbuf == recvbuf. A null stream means host memory. */
  CHECK(coll_allreduce(data, data, 4, COLL_FLOAT32, COLL_SUM, comm, NULL));

  if (rank == 0) printf("rank 0 of %d: sum = %g %g %g %g\n", size, data[0], data[1], data[2], data[3]);
  CHECK(coll_comm_destroy(comm));
  return 0;
}
