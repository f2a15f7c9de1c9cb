// serve/output_writer.hpp — the server's output: whole frames, in order, written by a thread
// of its own.
//
// No producer writes to the client itself, so a client that reads slowly holds back only the
// producers that choose to wait for room (request threads), never the host's I/O thread nor
// the reading thread. The queue is bounded by bytes: a frame is taken while fewer than
// k_output_queue_budget bytes wait, so at most the budget plus one frame is held. The writer
// never blocks in write(2) either: it waits for the descriptor to be writable and writes what
// fits, so that stopping can abandon a client that reads nothing. A pipe whose reader is
// gone fails the write only if SIGPIPE is ignored, as a Host makes it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace exthost::server {

// Bytes of frames that may wait for the client before producers are held back.
inline constexpr std::size_t k_output_queue_budget = 8 * 1024 * 1024;
// How long stopping lets what is queued reach the client before it is abandoned.
inline constexpr std::chrono::milliseconds k_output_drain_bound{3'000};

class OutputWriter {
 public:
  // Writes to `fd` (not owned). `on_room` runs on the writer's thread each time the queue
  // falls below its budget again, and when the output closes: keep it short.
  OutputWriter(int fd, std::function<void()> on_room);
  ~OutputWriter();
  OutputWriter(const OutputWriter&) = delete;
  OutputWriter& operator=(const OutputWriter&) = delete;

  // Queues one frame, waiting while the queue is at its budget (not once stop_waiting() was
  // called). False when the output is closed: the frame is dropped, nobody can read it.
  bool push(std::string frame);
  // Queues one frame without waiting, whatever the queue holds: for the reading thread's
  // own small answers, which it may give only while accepting() (so they stay bounded).
  void push_now(std::string frame);
  // Whether new work may add frames: what is queued and what producers wait to queue are
  // together below the budget, or the output is closed (then frames are dropped at once).
  // The reading thread starts no request otherwise, so a client that stops reading holds
  // at most the budget plus the replies of requests already running.
  bool accepting() const;
  // From now on push() never waits: the server is stopping, and what is still to be written
  // is already in memory.
  void stop_waiting();
  // Writes what is queued for at most `bound`, then ends the thread; later frames are dropped.
  void finish(std::chrono::milliseconds bound = k_output_drain_bound);

 private:
  void run();
  bool write_frame(const std::string& frame);  // false: the output is closed or abandoned
  void wake();

  int m_fd;
  int m_wake_fd = -1;  // an eventfd: wakes the writer from its wait for the descriptor
  bool m_socket = false;      // sockets are written without waiting (MSG_DONTWAIT)
  std::size_t m_chunk = 0;    // the most one write(2) carries
  std::function<void()> m_on_room;
  mutable std::mutex m_mutex;
  std::condition_variable m_work;  // the writer waits for frames
  std::condition_variable m_room;  // producers wait for room
  std::deque<std::string> m_queue;
  std::size_t m_bytes = 0;    // queued, including the frame being written
  std::size_t m_waiting = 0;  // of frames whose producers wait in push()
  bool m_no_wait = false;
  bool m_finishing = false;
  bool m_closed = false;
  std::atomic<std::chrono::steady_clock::rep> m_deadline{0};  // when finishing: give up then
  std::atomic<bool> m_has_deadline{false};
  std::thread m_thread;
};

}  // namespace exthost::server
