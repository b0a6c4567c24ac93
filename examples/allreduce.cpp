// allreduce.cpp — the C example with coll.hpp: every rank contributes
// rank+1, and rank 0 prints the sum. Run it with: collrun -n 2 ./allreduce_cpp
#include <coll/coll.hpp>

#include <cstdio>
#include <span>
#include <vector>

int main() {
  try {
    coll::Communicator comm = coll::Communicator::from_env();
    std::vector<float> data(4, static_cast<float>(comm.rank() + 1));

    comm.allreduce(std::span<float>(data), COLL_SUM);  // in place; datatype inferred

    if (comm.rank() == 0)
      std::printf("rank 0 of %d: sum = %g %g %g %g\n", comm.size(), data[0], data[1], data[2], data[3]);
  } catch (const coll::Exception& e) {  // the communicator is destroyed on the way out
    std::fprintf(stderr, "coll error: %s\n", e.what());
    return 1;
  }
  return 0;
}
