// inspect_threads: checks the ordering contract of a capture of samples/multi_thread, through the
// format Reader only (no CUDA). Usage: inspect_threads FILE THREADS LAUNCHES
//
// What the capture must show (writer.h: "sequence numbers are 0-based, gap-free and strictly
// increasing in file order"; a thread appends its records in the order it returns from its calls):
//  1. seq: records come 0, 1, 2, ... with CallRecord.seq equal to their position, in frames whose
//     index never decreases (file order = seq order).
//  2. per thread: the calls of one OS thread (CallRecord.threadId) are in the order the thread made
//     them: each starts no earlier than the previous one ended (startNs/endNs, one monotonic
//     clock).
//  3. per worker thread (one that launches): its first record is cuCtxSetCurrent, it creates
//     exactly one stream, and every copy and launch it issues is on that stream.
//  4. per stream, in seq order: two host-to-device copies, then LAUNCHES launches whose `tag`
//     parameter (the last one, thread << 16 | step) names one thread and steps 0, 1, 2, ... with
//     the kernel alternating mix / rotate_add, then one device-to-host copy, then the copy's
//     deferredResult (its host checksum, observed in stream order by a host function the
//     synchronisation waits for), then the owning thread's cuStreamSynchronize and
//     cuStreamDestroy (cuStreamSynchronize may also come between launches: --sync-every).
//  5. THREADS worker threads, with tags naming threads 0 .. THREADS-1 once each.
// Prints "threads ok: ..." and the number of times consecutive worker records switch threads
// (how much the threads interleaved), and exits 0; a violation is printed with its seq, exit 1.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cusnap/format/reader.h"

using namespace cusnap::format;

namespace {

struct StreamState {
  uint64_t owner = 0;   // threadId of the creating thread
  int tag_thread = -1;  // thread index named by the launch tags
  int phase = 0;        // 0: copies in, 1: launches, 2: copied out, 3: synchronised
  unsigned copies_in = 0;
  unsigned next_step = 0;
  uint64_t copy_out_seq = UINT64_MAX;
  bool deferred_seen = false;
};

struct ThreadState {
  bool first_seen = false;
  bool worker = false;  // made a cuCtxSetCurrent first and created a stream
  uint64_t stream = 0;
  int64_t last_end_ns = INT64_MIN;
  uint64_t last_seq = 0;
};

class Checker {
 public:
  Checker(unsigned threads, unsigned launches) : threads_(threads), launches_(launches) {}

  bool check(const CallRef& ref) {
    auto call = ref.get();
    uint64_t seq = ref.seq();
    if (seq != next_seq_ || call.getSeq() != seq) {
      return fail(seq, "sequence numbers are not gap-free and in order: expected " +
                           std::to_string(next_seq_) + ", record says " +
                           std::to_string(call.getSeq()));
    }
    ++next_seq_;
    if (ref.frame() < last_frame_)
      return fail(seq, "record is in an earlier frame than its predecessor");
    last_frame_ = ref.frame();

    std::string api = call.getApiName().cStr();
    if (api == "cusnap") return check_tool_record(seq, call);

    uint64_t tid = call.getThreadId();
    ThreadState& thread = threads_by_id_[tid];
    // Without timestamps the per-thread order check below would prove nothing.
    if (tid == 0 || call.getStartNs() <= 0 || call.getEndNs() < call.getStartNs()) {
      return fail(seq, "record without a thread id or a start/end time");
    }
    if (call.getStartNs() < thread.last_end_ns) {
      return fail(seq, "thread " + std::to_string(tid) +
                           ": call starts before its previous call (seq " +
                           std::to_string(thread.last_seq) + ") ended");
    }
    thread.last_end_ns = call.getEndNs();
    thread.last_seq = seq;
    bool first = !thread.first_seen;
    thread.first_seen = true;
    if (last_worker_tid_ != 0 && thread.worker && tid != last_worker_tid_) ++switches_;

    switch (call.which()) {
      case schema::CallRecord::CONTEXT_SET_CURRENT:
        if (first && tid != main_tid_) pending_workers_.insert(tid);
        break;
      case schema::CallRecord::STREAM_CREATE: {
        if (!pending_workers_.count(tid)) {
          // The main thread creates no stream in multi_thread.
          return fail(seq, "stream created by a thread whose first call was not cuCtxSetCurrent");
        }
        if (thread.worker) return fail(seq, "a worker thread created a second stream");
        thread.worker = true;
        thread.stream = call.getStreamCreate().getStream();
        if (streams_.count(thread.stream))
          return fail(seq, "stream handle created twice while alive");
        streams_[thread.stream].owner = tid;
        ++workers_;
        break;
      }
      case schema::CallRecord::MEMCPY: {
        auto m = call.getMemcpy();
        StreamState* s = stream_of(seq, tid, thread, m.getStream());
        if (s == nullptr) return false;
        if (m.getKind() == schema::Memcpy::Kind::HOST_TO_DEVICE) {
          if (s->phase != 0 || s->copies_in >= 2)
            return fail(seq, "host-to-device copy out of place on its stream");
          ++s->copies_in;
        } else if (m.getKind() == schema::Memcpy::Kind::DEVICE_TO_HOST) {
          if (s->phase != 1 || s->next_step != launches_) {
            return fail(
                seq, "device-to-host copy before all " + std::to_string(launches_) + " launches");
          }
          s->phase = 2;
          s->copy_out_seq = seq;
          copy_out_stream_[seq] = m.getStream();
        } else {
          return fail(seq, "unexpected copy kind");
        }
        break;
      }
      case schema::CallRecord::LAUNCH: {
        auto l = call.getLaunch();
        StreamState* s = stream_of(seq, tid, thread, l.getStream());
        if (s == nullptr) return false;
        if (s->phase == 0) {
          if (s->copies_in != 2) return fail(seq, "launch before both host-to-device copies");
          s->phase = 1;
        }
        if (s->phase != 1) return fail(seq, "launch after the device-to-host copy");
        auto layout = l.getLayout();
        auto params = l.getParams();
        if (layout.size() == 0) return fail(seq, "launch without a parameter layout");
        auto last = layout[layout.size() - 1];
        if (last.getSize() != 4 || last.getOffset() + 4 > params.size())
          return fail(seq, "bad tag slot");
        uint32_t tag;
        std::memcpy(&tag, params.begin() + last.getOffset(), 4);
        int tag_thread = static_cast<int>(tag >> 16);
        unsigned step = tag & 0xffffu;
        if (s->tag_thread < 0) {
          if (tag_thread >= static_cast<int>(threads_) || !tag_threads_.insert(tag_thread).second) {
            return fail(seq, "launch tag names thread " + std::to_string(tag_thread) +
                                 " twice or out of range");
          }
          s->tag_thread = tag_thread;
        }
        if (tag_thread != s->tag_thread)
          return fail(seq, "launches of two sample threads on one stream");
        if (step != s->next_step) {
          return fail(seq, "stream launches out of issue order: step " + std::to_string(step) +
                               ", expected " + std::to_string(s->next_step));
        }
        std::string expected_kernel = step % 2 == 0 ? "mix" : "rotate_add";
        if (expected_kernel != l.getKernelName().cStr()) {
          return fail(seq,
                      "step " + std::to_string(step) + " launched " + l.getKernelName().cStr());
        }
        ++s->next_step;
        ++launch_count_;
        break;
      }
      case schema::CallRecord::STREAM_SYNCHRONIZE: {
        StreamState* s = stream_of(seq, tid, thread, call.getStreamSynchronize().getStream());
        if (s == nullptr) return false;
        if (s->phase == 1) break;  // --sync-every: between launches
        if (s->phase != 2)
          return fail(seq, "stream synchronised before its launches or twice at the end");
        // The shim checksums the copy in a host function enqueued after it, which the
        // synchronisation waits for: its record must come first.
        if (!s->deferred_seen)
          return fail(seq, "cuStreamSynchronize returned before its copy's deferred result");
        s->phase = 3;
        break;
      }
      case schema::CallRecord::STREAM_DESTROY: {
        uint64_t handle = call.getStreamDestroy().getStream();
        auto it = streams_.find(handle);
        if (it == streams_.end() || it->second.owner != tid)
          return fail(seq, "unknown stream destroyed");
        if (it->second.phase != 3) return fail(seq, "stream destroyed before it was synchronised");
        if (!it->second.deferred_seen)
          return fail(seq, "stream destroyed before its copy's deferred result");
        finished_.push_back(it->second);
        streams_.erase(it);
        break;
      }
      default:
        break;
    }
    if (main_tid_ == 0) main_tid_ = tid;  // the first call (cuInit) is the main thread's
    if (thread.worker) last_worker_tid_ = tid;
    return true;
  }

  bool finish() {
    for (const auto& [handle, s] : streams_) finished_.push_back(s);
    if (workers_ != threads_) {
      return fail(next_seq_, std::to_string(workers_) + " worker threads recorded, expected " +
                                 std::to_string(threads_));
    }
    for (const StreamState& s : finished_) {
      if (s.phase != 3 || s.next_step != launches_ || !s.deferred_seen) {
        return fail(next_seq_, "a stream's work is incomplete in the capture (thread " +
                                   std::to_string(s.tag_thread) + ")");
      }
    }
    if (launch_count_ != uint64_t{threads_} * launches_)
      return fail(next_seq_, "wrong launch count");
    std::printf("threads ok: %u threads, %u launches each, %llu calls, %llu thread switches\n",
                threads_, launches_, static_cast<unsigned long long>(next_seq_),
                static_cast<unsigned long long>(switches_));
    return true;
  }

 private:
  bool check_tool_record(uint64_t seq, schema::CallRecord::Reader call) {
    if (call.which() != schema::CallRecord::DEFERRED_RESULT) return true;
    auto d = call.getDeferredResult();
    uint64_t target = d.getCallSeq();
    if (target >= seq) return fail(seq, "deferred result before the call it completes");
    auto it = copy_out_stream_.find(target);
    if (it == copy_out_stream_.end()) return true;  // not one of the workers' result copies
    if (!d.getHasHostChecksum())
      return fail(seq, "device-to-host copy completed without a checksum");
    auto s = streams_.find(it->second);
    if (s == streams_.end()) return fail(seq, "deferred result after its stream was destroyed");
    if (s->second.deferred_seen) return fail(seq, "two deferred results for one copy");
    s->second.deferred_seen = true;
    return true;
  }

  StreamState* stream_of(uint64_t seq, uint64_t tid, const ThreadState& thread, uint64_t handle) {
    auto it = streams_.find(handle);
    if (!thread.worker || it == streams_.end() || handle != thread.stream ||
        it->second.owner != tid) {
      fail(seq, "work on a stream the calling thread did not create");
      return nullptr;
    }
    return &it->second;
  }

  bool fail(uint64_t seq, const std::string& what) {
    std::printf("ORDER VIOLATION at seq %llu: %s\n", static_cast<unsigned long long>(seq),
                what.c_str());
    return false;
  }

  unsigned threads_;
  unsigned launches_;
  uint64_t next_seq_ = 0;
  uint32_t last_frame_ = 0;
  uint64_t main_tid_ = 0;
  uint64_t last_worker_tid_ = 0;
  uint64_t switches_ = 0;
  uint64_t launch_count_ = 0;
  unsigned workers_ = 0;
  std::map<uint64_t, ThreadState> threads_by_id_;
  std::set<uint64_t> pending_workers_;
  std::map<uint64_t, StreamState> streams_;
  std::vector<StreamState> finished_;
  std::map<uint64_t, uint64_t> copy_out_stream_;  // seq of a device-to-host copy -> its stream
  std::set<int> tag_threads_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: inspect_threads FILE THREADS LAUNCHES\n");
    return 2;
  }
  unsigned threads = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10));
  unsigned launches = static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10));
  auto opened = Reader::open(argv[1]);
  if (!opened) {
    std::fprintf(stderr, "inspect_threads: %s\n", opened.status().to_string().c_str());
    return 2;
  }
  Reader& reader = *opened.value();
  if (reader.recovery().state != Integrity::kWhole) {
    std::printf("capture is not whole: %s\n", reader.recovery().summary().c_str());
    return 1;
  }
  Checker checker(threads, launches);
  bool ok = true;
  Status status = reader.for_each_call([&](const CallRef& ref) { return ok = checker.check(ref); });
  if (!status) {
    std::fprintf(stderr, "inspect_threads: %s\n", status.to_string().c_str());
    return 1;
  }
  if (!ok || !checker.finish()) return 1;
  return 0;
}
