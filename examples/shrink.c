/* shrink.c — training that survives the loss of a rank.
 *
 * Every rank holds the model w (four numbers here) and, each step, sums its
 * gradient with everyone's (allreduce) and takes a step with the average.
 * Before step 5 one rank dies (SIGKILL, as if its node went away). The
 * others' allreduce fails; they shrink the communicator, and redo step 5
 * from the model as the last completed step left it. They need not say who
 * died (exclude list NULL, 0): shrink finds the ranks whose process is gone.
 * A rank known to be dead by other means (a launcher, a health check) can
 * be named instead, which also covers a node that went silent without the
 * wait for the timeout.
 *
 * Run it with: collrun --grace 60 -n 4 ./shrink
 * (collrun then reports the killed rank and exits with 137.) */
#include <coll/coll.h>
#include <signal.h>
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
  coll_comm_t comm = NULL;
  int rank, size;
  CHECK(coll_comm_init_from_env(&comm));
  CHECK(coll_comm_rank(comm, &rank));
  CHECK(coll_comm_size(comm, &size));
  const int me = rank;         /* the data belongs to the process, not to its rank number */
  const int victim = size - 2; /* in the first communicator's numbering */
  float w[4] = {0, 0, 0, 0};

  for (int step = 1; step <= 10;) {
    float grad[4];
    for (int i = 0; i < 4; ++i) grad[i] = (float)((me + 1) * (i + 1));
    if (me == victim && step == 5) raise(SIGKILL);
    coll_result_t r = coll_allreduce(grad, grad, 4, COLL_FLOAT32, COLL_SUM, comm, NULL);
    if (r != COLL_SUCCESS) {
      printf("rank %d: step %d failed (%s): %s\n", rank, step, coll_get_error_string(r), coll_get_last_error(comm));
      coll_comm_t survivors = NULL;
      CHECK(coll_comm_shrink(comm, NULL, 0, &survivors));
      CHECK(coll_comm_destroy(comm));
      comm = survivors;
      CHECK(coll_comm_rank(comm, &rank));
      CHECK(coll_comm_size(comm, &size));
      if (rank == 0) printf("going on with %d ranks from step %d\n", size, step);
      continue; /* w is as the last completed step left it */
    }
    for (int i = 0; i < 4; ++i) w[i] -= 0.01f * grad[i] / (float)size;
    ++step;
  }
  if (rank == 0) printf("rank 0 of %d: w = %.3g %.3g %.3g %.3g\n", size, w[0], w[1], w[2], w[3]);
  CHECK(coll_comm_destroy(comm));
  return 0;
}
