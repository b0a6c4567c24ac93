/* elastic_train.c — training that survives failures, with hot spares and
 * state rebuilt from peers' memory instead of a checkpoint on disk.
 *
 * Eight ranks each hold one shard of a model (integers, so that every sum
 * is exact in any order). Each step, every rank computes a gradient from
 * its shard, the gradients are summed (allreduce), and every shard takes a
 * step with the sum. Every 5 steps each rank keeps a copy of its own shard
 * and sends one to its right neighbour (the rank holding the next shard):
 * a buddy checkpoint in memory. Two ranks die (SIGKILL), one after the
 * other. Each time, the others:
 *   1. find the failure (their allreduce fails), shrink the communicator,
 *      and agree on the checkpoint to resume from;
 *   2. grow it by a spare, which was waiting in coll_comm_init_from_env;
 *   3. the dead rank's right neighbour sends the spare the dead rank's
 *      shard from its buddy copy;
 *   4. everyone goes back to the checkpoint and trains on.
 * At the end rank 0 computes the same steps alone, without failures, and
 * checks that the model is equal bit for bit.
 *
 * Run it with: collrun --spares 2 --grace 600 -n 8 ./elastic_train [KiB]
 * (collrun then reports the killed ranks and exits with 137). KiB sets the
 * size of a shard (32 by default). */
#include <coll/coll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kShards = 8, kSteps = 60, kEvery = 5 };
static size_t kLen = 4096;                          /* words a shard: 32 KiB, or the KiB given as the first argument */
static const int kKills[2][2] = {{2, 23}, {5, 41}}; /* {shard, step}: its first holder dies there */

typedef struct {
  int shard;          /* which shard this process holds */
  uint64_t* w;        /* the shard */
  int saved_step[2];  /* the two newest checkpoints, by step */
  uint64_t* saved[2]; /* this shard at each */
  uint64_t* buddy[2]; /* the left neighbour's shard at each */
} State;

static State s;
static coll_comm_t comm;
static int rank, size;

static void die(const char* what, coll_comm_t c) {
  fprintf(stderr, "shard %d: %s failed: %s\n", s.shard, what, coll_get_last_error(c));
  exit(1);
}
#define CHECK(call, c)                         \
  do {                                         \
    if ((call) != COLL_SUCCESS) die(#call, c); \
  } while (0)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}
static uint64_t* words(size_t n) {
  uint64_t* p = calloc(n, sizeof(uint64_t));
  if (p == NULL) {
    fprintf(stderr, "out of memory for %zu words\n", n);
    exit(1);
  }
  return p;
}
static void start_shard(uint64_t* w, int shard) {
  for (size_t i = 0; i < kLen; ++i) w[i] = mix((uint64_t)shard * kLen + (uint64_t)i);
}
static void gradient(const uint64_t* w, int step, uint64_t* g) {
  for (size_t i = 0; i < kLen; ++i) g[i] = mix(w[i] + (uint64_t)step * 1000003u + (uint64_t)i);
}
static void take_step(uint64_t* w, const uint64_t* sum, int shard) {
  for (size_t i = 0; i < kLen; ++i) w[i] = w[i] * 6364136223846793005ULL + sum[i] + (uint64_t)shard;
}

/* The rank holding each shard in `c`. */
static coll_result_t holders(coll_comm_t c, int* rank_of_shard) {
  int n, shards[kShards];
  coll_comm_size(c, &n);
  coll_result_t r = coll_allgather(&s.shard, shards, 1, COLL_INT32, c, NULL);
  for (int i = 0; i < n && r == COLL_SUCCESS; ++i) rank_of_shard[shards[i]] = i;
  return r;
}

/* Keeps this shard and sends it to the right neighbour, which keeps it too.
 * A failure here is recovered from like one in a step. */
static coll_result_t checkpoint(int step) {
  int rank_of_shard[kShards];
  coll_result_t r = holders(comm, rank_of_shard);
  if (r != COLL_SUCCESS) return r;
  const int k = step / kEvery % 2;
  memcpy(s.saved[k], s.w, kLen * sizeof(uint64_t));
  coll_group_start();
  coll_send(s.w, kLen, COLL_UINT64, rank_of_shard[(s.shard + 1) % kShards], comm, NULL);
  coll_recv(s.buddy[k], kLen, COLL_UINT64, rank_of_shard[(s.shard + kShards - 1) % kShards], comm, NULL);
  r = coll_group_end();
  if (r == COLL_SUCCESS) s.saved_step[k] = step;
  return r;
}

/* Steps 2 to 4 on the grown communicator, for old ranks and spares alike:
 * who holds which shard, the spares' shards from their buddies, and every
 * shard back at the checkpoint `resume` (-1 on a spare: it learns it). */
static int rebuild(int resume) {
  int info[2 + kShards] = {resume, 0}, shards[kShards], held[kShards] = {0}, rank_of_shard[kShards];
  CHECK(coll_allgather(&s.shard, shards, 1, COLL_INT32, comm, NULL), comm);
  for (int r = 0; r < size; ++r)
    if (shards[r] >= 0) held[shards[r]] = 1;
  for (int d = 0; d < kShards; ++d) /* the shards without a holder, in order: rank 0's word counts */
    if (!held[d]) info[2 + info[1]++] = d;
  CHECK(coll_broadcast(info, 2 + kShards, COLL_INT32, 0, comm, NULL), comm);
  resume = info[0];
  const int k = resume / kEvery % 2, old = size - info[1];
  if (s.shard < 0) s.shard = info[2 + rank - old]; /* a spare: the j-th orphan shard */
  CHECK(holders(comm, rank_of_shard), comm);
  for (int j = 0; j < info[1]; ++j) { /* the orphan's right neighbour has its copy */
    const int d = info[2 + j], from = rank_of_shard[(d + 1) % kShards], to = rank_of_shard[d];
    if (!held[(d + 1) % kShards]) die("rebuilding a shard whose buddy died too (no copy is left)", comm);
    if (rank == from) CHECK(coll_send(s.buddy[k], kLen, COLL_UINT64, to, comm, NULL), comm);
    if (rank == to) {
      CHECK(coll_recv(s.saved[k], kLen, COLL_UINT64, from, comm, NULL), comm);
      s.saved_step[k] = resume;
    }
  }
  memcpy(s.w, s.saved[k], kLen * sizeof(uint64_t));
  s.saved_step[k] = -1; /* checkpoint again at once: the spares' buddies need copies */
  return resume;
}

/* Steps 1 and 2 on the old ranks, after a failed call at `step`. */
static int recover(int step, double failed_at) {
  coll_comm_t survivors = NULL, grown = NULL;
  coll_comm_revoke(comm); /* any rank still waiting stops now */
  CHECK(coll_comm_shrink(comm, NULL, 0, &survivors), comm);
  coll_comm_destroy(comm);
  /* The newest checkpoint every survivor has finished, then agreed on. */
  int newest = s.saved_step[0] > s.saved_step[1] ? s.saved_step[0] : s.saved_step[1];
  CHECK(coll_allreduce(&newest, &newest, 1, COLL_INT32, COLL_MIN, survivors, NULL), survivors);
  if (newest < 0) die("finding a checkpoint every survivor has (a rank died while one was being made)", survivors);
  int have = s.saved_step[newest / kEvery % 2] == newest, n;
  CHECK(coll_comm_agree(survivors, &have, NULL, NULL), survivors);
  if (!have) die("agreeing on a checkpoint all survivors have", survivors);
  CHECK(coll_comm_size(survivors, &n), survivors);
  CHECK(coll_comm_grow(survivors, kShards - n, NULL, &grown), survivors);
  coll_comm_destroy(survivors);
  comm = grown;
  CHECK(coll_comm_rank(comm, &rank), comm);
  CHECK(coll_comm_size(comm, &size), comm);
  const int resume = rebuild(newest);
  if (rank == 0)
    printf("step %d failed; lost %d step(s) since the checkpoint at step %d; rebuilt in %.1f ms\n", step, step - resume,
           resume, now_ms() - failed_at);
  return resume;
}

/* Rank 0: the same steps alone, without failures; 1 if the model equals it. */
static int equals_a_run_without_failures(const uint64_t* model) {
  uint64_t *w = words(kShards * kLen), *g = words(kLen), *sum = words(kLen);
  for (int d = 0; d < kShards; ++d) start_shard(w + d * kLen, d);
  for (int step = 0; step < kSteps; ++step) {
    memset(sum, 0, kLen * sizeof(uint64_t));
    for (int d = 0; d < kShards; ++d) {
      gradient(w + d * kLen, step, g);
      for (size_t i = 0; i < kLen; ++i) sum[i] += g[i];
    }
    for (int d = 0; d < kShards; ++d) take_step(w + d * kLen, sum, d);
  }
  const int equal = memcmp(w, model, kShards * kLen * sizeof(uint64_t)) == 0;
  free(w), free(g), free(sum);
  return equal;
}

int main(int argc, char** argv) {
  const int spare = getenv("COLL_SPARE") != NULL;
  if (argc > 1) { /* at most 1 GiB a shard: 8 ranks hold 5 shards each, and rank 0 three models */
    const long kib = atol(argv[1]);
    if (kib < 1 || kib > (1L << 20)) {
      fprintf(stderr, "usage: elastic_train [KiB a shard, 1 to 1048576]\n");
      return 1;
    }
    kLen = (size_t)kib * 1024 / sizeof(uint64_t);
  }
  s.w = words(kLen);
  for (int k = 0; k < 2; ++k) s.saved[k] = words(kLen), s.buddy[k] = words(kLen);
  CHECK(coll_comm_init_from_env(&comm), NULL); /* a spare waits here until the others grow */
  CHECK(coll_comm_rank(comm, &rank), comm);
  CHECK(coll_comm_size(comm, &size), comm);
  s.saved_step[0] = s.saved_step[1] = -1;
  s.shard = spare ? -1 : rank;
  int step = 0;
  if (spare)
    step = rebuild(-1);
  else
    start_shard(s.w, s.shard);
  uint64_t* g = words(kLen);
  double first_after = -1, failed_at = 0, stepping_ms = 0; /* the steps done, checkpoints included */
  int steps_run = 0;
  while (step < kSteps) {
    const double began = now_ms();
    coll_result_t r = COLL_SUCCESS;
    if (step % kEvery == 0 && s.saved_step[step / kEvery % 2] != step) r = checkpoint(step);
    for (int k = 0; k < 2 && !spare; ++k)
      if (r == COLL_SUCCESS && s.shard == kKills[k][0] && step == kKills[k][1]) raise(SIGKILL);
    if (r == COLL_SUCCESS) {
      gradient(s.w, step, g);
      r = coll_allreduce(g, g, kLen, COLL_UINT64, COLL_SUM, comm, NULL);
    }
    if (r != COLL_SUCCESS) {
      failed_at = now_ms();
      step = recover(step, failed_at);
      first_after = failed_at;
      continue;
    }
    take_step(s.w, g, s.shard);
    ++step, ++steps_run;
    stepping_ms += now_ms() - began;
    if (first_after >= 0 && rank == 0) {
      printf("  first step after it done %.1f ms after the failure was seen\n", now_ms() - first_after);
      first_after = -1;
    }
  }
  /* The model in shard order on rank 0, checked there. */
  uint64_t *all = words(kShards * kLen), *model = words(kShards * kLen);
  int rank_of_shard[kShards];
  CHECK(holders(comm, rank_of_shard), comm);
  CHECK(coll_allgather(s.w, all, kLen, COLL_UINT64, comm, NULL), comm);
  if (rank == 0) {
    for (int d = 0; d < kShards; ++d) memcpy(model + d * kLen, all + rank_of_shard[d] * kLen, kLen * sizeof(uint64_t));
    const int equal = equals_a_run_without_failures(model);
    printf("%d ranks after %d steps: the model %s a run without failures, bit for bit\n", size, kSteps,
           equal ? "equals" : "DIFFERS FROM");
    printf("  a step took %.1f ms on average (%zu KiB a shard)\n", stepping_ms / steps_run,
           kLen * sizeof(uint64_t) / 1024);
    if (!equal) return 2;
  }
  CHECK(coll_comm_destroy(comm), NULL);
  return 0;
}
