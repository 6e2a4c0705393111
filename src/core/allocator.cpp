// A caching allocator: freed blocks go to per-size free lists and are handed out
// again, so repeated minibatches of the same shape allocate nothing from the OS.
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <unordered_map>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "cntk/tensor.h"
#include "core/output_hint.h"

namespace cntk {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kMaxCachedBytes = size_t(1) << 31;  // cap on memory held in free lists

size_t round_up(size_t bytes) {
  // Buckets: multiples of 64 bytes up to 4 KiB, then steps of 1/8 of the power of two.
  if (bytes <= 4096) return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  size_t p = 1;
  while (p < bytes) p <<= 1;
  size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

// Blocks of 2 MiB and more start on a 2 MiB boundary and ask the kernel for transparent
// huge pages over their whole 2 MiB pages (madvise: where the system's policy is
// "madvise", the usual default, nothing else gets them). Parameters, their gradients and
// the learners' state are such blocks, and a pass over them, such as Adam's over the
// fastText embedding (1.2M x 50, with its two moments 720 MB), missed the TLB on every
// 4 KiB page: that step took about 50 ms on 4 KiB pages and 28-39 ms on huge pages (AMD EPYC);
// AlexNet's and GoogLeNet's steps gained 4%. CNTK_MALLOC_TUNING=0 turns this off too.
constexpr size_t kHugePage = size_t(2) << 20;

bool huge_pages() {
#if defined(__linux__)
  static const bool on = [] {
    const char* v = std::getenv("CNTK_MALLOC_TUNING");
    return !(v && std::string_view(v) == "0");
  }();
  return on;
#else
  return false;
#endif
}

void* allocate_huge(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, kHugePage, bytes) != 0) return nullptr;  // aligned_alloc wants whole alignments
#if defined(__linux__)
  if (p) madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);  // advice only: a refusal changes nothing
#endif
  return p;
}

struct Pool {
  std::mutex mu;
  std::atomic<size_t> fresh{0};     // blocks taken from the system, not from a free list
  std::atomic<size_t> requests{0};  // blocks asked for
  std::unordered_map<size_t, std::vector<void*>> free_lists;
  size_t cached = 0;

  void* get(size_t bytes) {
    requests.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = free_lists.find(bytes);
      if (it != free_lists.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached -= bytes;
        return p;
      }
    }
    ++fresh;
    void* p = huge_pages() && bytes >= kHugePage ? allocate_huge(bytes) : std::aligned_alloc(kAlignment, bytes);
    if (!p) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes");
    return p;
  }

  void put(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    if (cached + bytes > kMaxCachedBytes) {
      std::free(p);
      return;
    }
    free_lists[bytes].push_back(p);
    cached += bytes;
  }

  ~Pool() {
    for (auto& kv : free_lists)
      for (void* p : kv.second) std::free(p);
  }
};

// Memory the engine does not allocate itself (oneDNN's layouts, workspaces and reorder
// buffers, which oneDNN takes from malloc) is freed and allocated again every training
// step. glibc hands a freed block of a few MB back to the system (a munmap, or the heap's
// top trimmed past 128 KiB), so the next step faults every page of it in again: a
// GoogLeNet step took about 60,000 page faults and 10% of its time that way. So every
// block comes from the heap (glibc's mmap threshold cannot be raised past 32 MiB, and
// GoogLeNet's first layers hold 38-51 MB activations and gradients: with only the
// threshold raised those still cost 4-8% of its step), and the heap keeps up to 256 MiB
// of free top. Applied once at load, unless the process sets glibc's own MALLOC_*
// variables or CNTK_MALLOC_TUNING=0.
bool tune_malloc() {
#if defined(__GLIBC__)
  for (const char* v : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_MAX_", "MALLOC_TOP_PAD_"})
    if (std::getenv(v)) return false;
  if (const char* v = std::getenv("CNTK_MALLOC_TUNING"); v && std::string_view(v) == "0") return false;
  return mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, 256 << 20) == 1;
#else
  return false;
#endif
}

const bool kMallocTuned = tune_malloc();

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: storages may outlive static teardown
  return *p;
}

}  // namespace

size_t storage_system_allocations() { return pool().fresh; }

bool detail::malloc_tuned() { return kMallocTuned; }

size_t detail::storage_requests() { return pool().requests; }

Storage::Storage(size_t bytes) : bytes_(round_up(bytes == 0 ? 1 : bytes)) { data_ = pool().get(bytes_); }

Storage::~Storage() {
  if (!keepalive_) pool().put(data_, bytes_);
}

}  // namespace cntk
