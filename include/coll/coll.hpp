// coll.hpp — header-only C++20 layer over the C ABI in coll.h.
//
// RAII communicator, std::span overloads that infer the datatype, and
// exceptions (coll::Exception) that carry the result code and the message of
// coll_get_last_error(). Nothing here is compiled into the library, so the
// C ABI stays the only binary interface. Thread safety is that of coll.h.
#pragma once

#include <coll/coll.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace coll {
// An inline namespace: users write coll::Communicator, and the linker sees
// coll::cxx::, apart from the library's own classes of those names (linked
// statically, coll::Communicator::abort() was once the library's, called
// on this class's object).
inline namespace cxx {

// A failed call: code() is the coll_result_t, what() the full message.
class Exception : public std::runtime_error {
 public:
  Exception(coll_result_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  coll_result_t code() const noexcept { return code_; }

 private:
  coll_result_t code_;
};

// Throws coll::Exception when `result` is not COLL_SUCCESS, with the last
// error of `comm` (or of this thread when comm is null).
inline void check(coll_result_t result, coll_comm_t comm = nullptr) {
  if (result == COLL_SUCCESS) return;
  std::string message = coll_get_error_string(result);
  const char* detail = coll_get_last_error(comm);
  if (detail != nullptr && *detail != '\0') message += std::string(": ") + detail;
  throw Exception(result, message);
}

// A group (coll_group_start/end) as a scope. end() runs the calls recorded
// since it began and throws on failure; so does leaving the scope, without
// the throw (a failure then shows at the communicator's next call). Left by
// an exception, it ends without running anything: the thread's later calls
// are not recorded into a group that never ends. The peers' groups wait for
// this rank's, as after a refused call: abort the communicator
// (coll_comm_abort), or a later call of the same shape may meet one of
// them. A span call that
// this layer refuses itself (spans whose sizes do not match) fails the
// group, as a call that coll.h refuses does: end() then runs nothing and
// throws. (Inside a bare coll_group_start/end such a call throws and the
// group does not learn of it: group with coll::Group.) Nested groups are
// one, run by the outermost end. A group belongs to the thread that began
// it (as coll_group_start's does): end() once, on that thread.
class Group {
 public:
  Group() : exceptions_(std::uncaught_exceptions()), thread_(std::this_thread::get_id()) {
    check(coll_group_start());
    ++open();
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  ~Group() {
    if (ended_) return;
    if (std::uncaught_exceptions() > exceptions_ && refused().empty())
      refused() = "an exception left its scope before end()";
    finish();
  }

  void end() {
    if (ended_) throw Exception(COLL_INVALID_USAGE, "group_end: end() of a coll::Group that has ended");
    if (std::this_thread::get_id() != thread_)
      throw Exception(COLL_INVALID_USAGE, "group_end: end() of a coll::Group on another thread than began it");
    ended_ = true;
    const coll_result_t result = finish();
    if (!why_.empty()) throw Exception(COLL_INVALID_ARGUMENT, "group_end: nothing in the group ran, because " + why_);
    check(result);
  }

  // A call that this layer refused: inside a Group, the group fails.
  static void refuse(const std::string& why) {
    if (open() > 0 && refused().empty()) refused() = "a call in it was refused (" + why + ")";
  }

 private:
  static int& open() {
    static thread_local int depth = 0;
    return depth;
  }
  static std::string& refused() {
    static thread_local std::string why;
    return why;
  }
  // Ends this level. The outermost runs the group or, refused, first has
  // coll.h refuse a call (a null communicator) so that it runs nothing.
  coll_result_t finish() {
    if (--open() > 0) return coll_group_end();
    why_ = std::exchange(refused(), {});
    if (!why_.empty()) coll_barrier(nullptr);
    return coll_group_end();
  }

  int exceptions_;
  std::thread::id thread_;
  bool ended_ = false;
  std::string why_;
};

// The coll_datatype_t of a C++ element type, at compile time.
template <typename T>
constexpr coll_datatype_t datatype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, int8_t>)
    return COLL_INT8;
  else if constexpr (std::is_same_v<U, uint8_t>)
    return COLL_UINT8;
  else if constexpr (std::is_same_v<U, int32_t>)
    return COLL_INT32;
  else if constexpr (std::is_same_v<U, uint32_t>)
    return COLL_UINT32;
  else if constexpr (std::is_same_v<U, int64_t>)
    return COLL_INT64;
  else if constexpr (std::is_same_v<U, uint64_t>)
    return COLL_UINT64;
  else if constexpr (std::is_same_v<U, float>)
    return COLL_FLOAT32;
  else if constexpr (std::is_same_v<U, double>)
    return COLL_FLOAT64;
  else
    static_assert(sizeof(T) == 0, "no coll datatype for this type; use the raw overload");
}

// Creates a job identity and starts its bootstrap store in this process.
inline coll_unique_id_t unique_id() {
  coll_unique_id_t id;
  check(coll_get_unique_id(&id));
  return id;
}

// `count` zeroed elements of T from coll_mem_alloc (see coll.h): memory that
// ranks on the node can read in place, usable by any collective, whole or in
// part. Freed when it goes out of scope; count 0 is an empty buffer.
template <typename T>
class SharedBuffer {
  // Zeroed bytes are its elements: nothing is constructed or destroyed.
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "SharedBuffer holds elements that collectives copy as bytes");

 public:
  explicit SharedBuffer(size_t count) : count_(count) {
    if (count == 0) return;
    if (count > SIZE_MAX / sizeof(T))
      throw Exception(COLL_INVALID_ARGUMENT, "SharedBuffer: count * sizeof(T) overflows");
    void* p = nullptr;
    check(coll_mem_alloc(&p, count * sizeof(T)));
    data_ = static_cast<T*>(p);
  }
  SharedBuffer(SharedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  SharedBuffer& operator=(SharedBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;
  ~SharedBuffer() { reset(); }

  // A const buffer gives const elements: an input, never an output.
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  std::span<T> span() { return {data_, count_}; }
  std::span<const T> span() const { return {data_, count_}; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  void reset() {
    if (data_ != nullptr) coll_mem_free(data_);
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  size_t count_ = 0;
};

// Owns a coll_comm_t; destroyed (not aborted) when it goes out of scope.
class Communicator {
 public:
  // From the launcher's environment (collrun, torchrun, mpirun, srun).
  static Communicator from_env() {
    coll_comm_t comm = nullptr;
    check(coll_comm_init_from_env(&comm));
    return Communicator(comm);
  }

  Communicator(int nranks, const coll_unique_id_t& id, int rank) {
    check(coll_comm_init_rank(&comm_, nranks, id, rank));
  }

  explicit Communicator(coll_comm_t adopted) : comm_(adopted) {}
  Communicator(Communicator&& other) noexcept : comm_(std::exchange(other.comm_, nullptr)) {}
  Communicator& operator=(Communicator&& other) noexcept {
    if (this != &other) {
      reset();
      comm_ = std::exchange(other.comm_, nullptr);
    }
    return *this;
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator() { reset(); }

  int rank() const {
    int r = -1;
    check(coll_comm_rank(comm_, &r), comm_);
    return r;
  }
  int size() const {
    int n = 0;
    check(coll_comm_size(comm_, &n), comm_);
    return n;
  }

  // Raw form: any datatype, including COLL_FLOAT16 and COLL_BFLOAT16.
  void allreduce(const void* send, void* recv, size_t count, coll_datatype_t dtype, coll_redop_t op,
                 coll_stream_t stream = nullptr) {
    check(coll_allreduce(send, recv, count, dtype, op, comm_, stream), comm_);
  }

  // Out of place; send and recv must have the same size.
  template <typename T>
  void allreduce(std::span<const T> send, std::span<T> recv, coll_redop_t op = COLL_SUM) {
    if (send.size() != recv.size()) refuse("allreduce: send and recv spans differ in size");
    allreduce(send.data(), recv.data(), send.size(), datatype_of<T>(), op);
  }

  // In place.
  template <typename T>
  void allreduce(std::span<T> data, coll_redop_t op = COLL_SUM) {
    allreduce(data.data(), data.data(), data.size(), datatype_of<T>(), op);
  }

  // The rest of the family, raw form (see coll.h for buffer sizes and in place).
  void broadcast(void* buf, size_t count, coll_datatype_t dtype, int root) {
    check(coll_broadcast(buf, count, dtype, root, comm_, nullptr), comm_);
  }
  void reduce(const void* send, void* recv, size_t count, coll_datatype_t dtype, coll_redop_t op, int root) {
    check(coll_reduce(send, recv, count, dtype, op, root, comm_, nullptr), comm_);
  }
  void allgather(const void* send, void* recv, size_t sendcount, coll_datatype_t dtype) {
    check(coll_allgather(send, recv, sendcount, dtype, comm_, nullptr), comm_);
  }
  void reduce_scatter(const void* send, void* recv, size_t recvcount, coll_datatype_t dtype, coll_redop_t op) {
    check(coll_reduce_scatter(send, recv, recvcount, dtype, op, comm_, nullptr), comm_);
  }
  void alltoall(const void* send, void* recv, size_t count, coll_datatype_t dtype) {
    check(coll_alltoall(send, recv, count, dtype, comm_, nullptr), comm_);
  }
  void send(const void* buf, size_t count, coll_datatype_t dtype, int peer) {
    check(coll_send(buf, count, dtype, peer, comm_, nullptr), comm_);
  }
  void recv(void* buf, size_t count, coll_datatype_t dtype, int peer) {
    check(coll_recv(buf, count, dtype, peer, comm_, nullptr), comm_);
  }
  void barrier() { check(coll_barrier(comm_), comm_); }

  // Span forms, the datatype inferred.
  template <typename T>
  void broadcast(std::span<T> data, int root) {
    broadcast(data.data(), data.size(), datatype_of<T>(), root);
  }
  // recv must hold size() * send.size() elements.
  template <typename T>
  void allgather(std::span<const T> send, std::span<T> recv) {
    if (recv.size() != send.size() * static_cast<size_t>(size()))
      refuse("allgather: recv must hold nranks * send.size() elements");
    allgather(send.data(), recv.data(), send.size(), datatype_of<T>());
  }

  // A new communicator of the ranks passing the same color (see coll_comm_split);
  // an empty one (get() == nullptr) for COLL_SPLIT_NOCOLOR.
  Communicator split(int color, int key) {
    coll_comm_t out = nullptr;
    check(coll_comm_split(comm_, color, key, &out), comm_);
    return Communicator(out);
  }

  // The survivors, without `exclude` and the ranks found gone (see
  // coll_comm_shrink), in their old order; this one is still destroyed by
  // its destructor.
  Communicator shrink(std::span<const int> exclude = {}) {
    if (exclude.size() > static_cast<size_t>(INT32_MAX))
      throw Exception(COLL_INVALID_ARGUMENT, "shrink: more excluded ranks than an int counts");
    coll_comm_t out = nullptr;
    check(coll_comm_shrink(comm_, exclude.data(), static_cast<int>(exclude.size()), &out), comm_);
    return Communicator(out);
  }

  // Stops every pending operation; the object still owns (and destroys) the handle.
  void abort() { check(coll_comm_abort(comm_), comm_); }
  void revoke() { check(coll_comm_revoke(comm_), comm_); }
  // With `nnew` new ranks that joined with `id` (read on rank 0 only; see
  // coll_comm_grow): the members first, in their order, then the new ranks.
  Communicator grow(int nnew, const coll_unique_id_t* id) {
    coll_comm_t out = nullptr;
    check(coll_comm_grow(comm_, nnew, id, &out), comm_);
    return Communicator(out);
  }
  // The same bitwise AND of the live ranks' flags on every rank (see
  // coll_comm_agree); `gone`, when given, gets the ranks gone.
  int agree(int flag, std::vector<int>* gone = nullptr) {
    std::vector<int> ranks(static_cast<size_t>(size()));
    int n = 0;
    check(coll_comm_agree(comm_, &flag, ranks.data(), &n), comm_);
    if (gone != nullptr) gone->assign(ranks.begin(), ranks.begin() + n);
    return flag;
  }

  coll_comm_t get() const { return comm_; }

 private:
  [[noreturn]] static void refuse(const std::string& why) {
    Group::refuse(why);
    throw Exception(COLL_INVALID_ARGUMENT, why);
  }

  void reset() {
    if (comm_ != nullptr) coll_comm_destroy(comm_);
    comm_ = nullptr;
  }

  coll_comm_t comm_ = nullptr;
};

}  // namespace cxx
}  // namespace coll
