// The receive side of one round, socket-free and Python-free: reassembly of DATA chunks into
// caller-owned buffers, out-of-order ACK bookkeeping, telemetry, early close and timers.
// It decides exactly what hosts/transport/receiver.py (RecvSession) decides for the same
// inputs and clock; the CPython binding (native/module.cpp) puts it behind that class's
// interface. It sends nothing itself: every frame to send is returned as a `Send`.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <vector>

#include "wire.h"

namespace gradlane {

// Why a sender's transfer closed; 1..3 are the STOP reasons of the wire (hosts/wire.py
// STOP_REASONS), OTHER a reason given from outside (close_sender), sent as 0.
enum Closed : int { OPEN = 0, BOUND = 1, COMPLETE = 2, DEADLINE = 3, OTHER = 4 };

// What one DATA did, as counter events (the binding turns them into named counters).
enum Event : int {
  EV_FOREIGN_RANK = 1, EV_CORRUPT = 2, EV_NONFINITE = 4, EV_LATE = 8,
  EV_RETX = 16, EV_DUPLICATE = 32, EV_SEND = 64,
};

struct Layer {        // one layer of one sender: three caller-owned arrays
  float* values;      // float32, layer_sizes[i] elements
  uint8_t* delivered; // bool per element
  uint8_t* chunks;    // bool per chunk
};

struct AckEntry {
  uint16_t layer;
  uint32_t seq;
  bool ce;
};

// One frame the receiver wants sent to `sender`: an ACK (payload = entries) or a STOP.
struct Send {
  int kind = -1;
  int sender = -1;
  std::vector<AckEntry> entries;
  uint32_t qdepth = 0;
  uint32_t qdelay_us = 0;
  int stop_reason = 0;
};

struct SenderState {
  std::vector<Layer> layers;
  std::vector<uint64_t> delivered_elems;
  std::vector<uint8_t> layer_met;   // layer scope: this layer reached its fraction
  int layers_short = 0;             // layer scope: layers still below their fraction
  int whole_short = 0;              // tensor scope: layers required whole, not yet whole
  uint64_t pooled_have = 0;         // tensor scope: delivered elements of the other layers
  int layers_complete = 0;
  bool has_addr = false;
  bool has_first = false;
  double first_data = 0.0;
  bool has_closed_at = false;
  double closed_at = 0.0;
  bool has_heard = false;
  double last_heard = 0.0;
  int flags_seen = 0;
  uint64_t duplicates = 0;
  std::vector<AckEntry> pending;
  std::vector<AckEntry> repeat;
  uint32_t pending_qdelay_us = 0;
  uint32_t pending_qdepth = 0;
  double last_ack = 0.0;
  double last_stop = -std::numeric_limits<double>::infinity();
  int closed = OPEN;
};

struct Data {        // the fields of one DATA packet the receiver reads
  int rank;
  int layer;
  uint32_t seq;
  uint32_t offset;
  int flags;
  int tos;
  uint32_t qdepth;
  uint32_t qdelay_us;
  uint32_t hops;
  const uint8_t* payload;
  size_t payload_len;
};

class RecvCore {
 public:
  struct Options {
    double deadline = 0.5;
    double absent_timeout = 10.0;
    int ack_every = 16;
    double ack_delay = 0.002;
    bool tensor_scope = false;
  };

  RecvCore(std::vector<uint32_t> layer_sizes, std::vector<uint32_t> chunk_elems,
           std::vector<double> required, Options options, std::vector<int> ranks, double opened)
      : sizes_(std::move(layer_sizes)), chunk_elems_(std::move(chunk_elems)),
        required_(std::move(required)), options_(options), ranks_(std::move(ranks)),
        opened_(opened) {
    for (size_t i = 0; i < sizes_.size(); ++i)
      counts_.push_back((sizes_[i] + chunk_elems_[i] - 1) / chunk_elems_[i]);
    // the pooled need, summed in the same order as TensorBuffer.meets
    for (size_t i = 0; i < sizes_.size(); ++i)
      if (required_[i] < 1.0) pooled_need_ += required_[i] * sizes_[i];
    senders_.resize(ranks_.size());
    for (size_t k = 0; k < ranks_.size(); ++k) {
      index_[ranks_[k]] = static_cast<int>(k);
      SenderState& s = senders_[k];
      s.layers.resize(sizes_.size());
      s.delivered_elems.assign(sizes_.size(), 0);
      s.layer_met.assign(sizes_.size(), 0);
      for (size_t i = 0; i < sizes_.size(); ++i) {
        if (layer_met(i, 0)) s.layer_met[i] = 1; else s.layers_short++;
        if (required_[i] >= 1.0) s.whole_short++;
      }
    }
  }

  size_t num_senders() const { return senders_.size(); }
  size_t num_layers() const { return sizes_.size(); }
  uint32_t chunk_count(size_t layer) const { return counts_[layer]; }
  uint32_t layer_size(size_t layer) const { return sizes_[layer]; }
  SenderState& sender(size_t k) { return senders_[k]; }
  int index_of(int rank) const {
    auto it = index_.find(rank);
    return it == index_.end() ? -1 : it->second;
  }
  bool done() const { return closed_count_ == senders_.size(); }
  bool has_finished() const { return has_finished_; }
  double finished() const { return finished_; }
  uint64_t tele_packets = 0;
  uint32_t tele_max_qdepth = 0, tele_max_qdelay_us = 0, tele_max_hops = 0;

  // One DATA packet (already a valid header of this job); returns Event bits. When EV_SEND is
  // set, `out` holds the frame to send. The sender's address is the caller's: it is updated
  // (the packet is valid) exactly when neither EV_CORRUPT nor EV_NONFINITE nor
  // EV_FOREIGN_RANK is set.
  int on_data(const Data& d, double now, Send& out) {
    int k = index_of(d.rank);
    if (k < 0) return EV_FOREIGN_RANK;
    SenderState& s = senders_[k];
    int placed = place(s, d);
    if (placed < 0) return placed == -1 ? EV_CORRUPT : EV_NONFINITE;
    heard(s, now);
    tele_packets++;
    tele_max_qdepth = std::max(tele_max_qdepth, d.qdepth);
    tele_max_qdelay_us = std::max(tele_max_qdelay_us, d.qdelay_us);
    tele_max_hops = std::max(tele_max_hops, d.hops);
    int ev = 0;
    if (s.closed != OPEN) {
      ev |= EV_LATE;
      if (send_stop(k, now, false, out)) ev |= EV_SEND;
      return ev;
    }
    if (!s.has_first) {
      s.has_first = true;
      s.first_data = now;
    }
    s.flags_seen |= d.flags;
    if (d.flags & FLAG_RETX) ev |= EV_RETX;
    if (!placed) {
      ev |= EV_DUPLICATE;
      s.duplicates++;
    }
    s.pending.push_back({static_cast<uint16_t>(d.layer), d.seq, (d.tos & 3) == ECN_CE});
    s.pending_qdelay_us = std::max(s.pending_qdelay_us, d.qdelay_us);
    s.pending_qdepth = std::max(s.pending_qdepth, d.qdepth);
    if (meets(s)) {
      if (close(k, s.layers_complete == static_cast<int>(sizes_.size()) ? COMPLETE : BOUND,
                now, out))
        ev |= EV_SEND;
    } else if (static_cast<int>(s.pending.size()) >= options_.ack_every ||
               (d.flags & FLAG_ACK_NOW)) {
      if (flush(k, now, out)) ev |= EV_SEND;
    }
    return ev;
  }

  void heard(SenderState& s, double now) {
    s.has_addr = true;
    s.has_heard = true;
    s.last_heard = now;
  }

  // Send the pending ACK entries (and the previous ACK's again); true if a frame is in `out`.
  bool flush(int k, double now, Send& out) {
    SenderState& s = senders_[k];
    bool sent = false;
    if (!s.pending.empty() && s.has_addr) {
      out = Send();
      out.kind = KIND_ACK;
      out.sender = k;
      out.entries = s.pending;
      out.entries.insert(out.entries.end(), s.repeat.begin(), s.repeat.end());
      out.qdepth = s.pending_qdepth;
      out.qdelay_us = s.pending_qdelay_us;
      s.repeat = s.pending;
      sent = true;
    }
    clear_acks(s);
    s.last_ack = now;
    return sent;
  }

  bool send_stop(int k, double now, bool force, Send& out) {
    SenderState& s = senders_[k];
    if (!s.has_addr || (!force && now - s.last_stop < 0.001)) return false;
    out = Send();
    out.kind = KIND_STOP;
    out.sender = k;
    out.stop_reason = s.closed == OTHER ? 0 : s.closed;
    s.last_stop = now;
    return true;
  }

  bool close(int k, int why, double now, Send& out) {
    SenderState& s = senders_[k];
    s.closed = why;
    s.has_closed_at = true;
    s.closed_at = now;
    clear_acks(s);
    closed_count_++;
    bool sent = send_stop(k, now, true, out);
    if (done()) {
      has_finished_ = true;
      finished_ = now;
    }
    return sent;
  }

  // Close senders whose deadline passed, flush due ACKs: the frames in `sends`, the next wake
  // time returned; `timeout` is the index of a silent sender past absent_timeout (else -1),
  // at which the walk stopped (the caller raises PeerTimeout after sending `sends`).
  double tick(double now, std::vector<Send>& sends, int& timeout) {
    double wake = std::numeric_limits<double>::infinity();
    timeout = -1;
    for (size_t k = 0; k < senders_.size(); ++k) {
      SenderState& s = senders_[k];
      if (s.closed != OPEN) continue;
      // silence counts mid-transfer too (a transfer with no deadline would wait forever)
      double heard_at = s.has_heard ? s.last_heard : 0.0;
      if (now - std::max(opened_, heard_at) > options_.absent_timeout) {
        timeout = static_cast<int>(k);
        return wake;
      }
      if (!s.has_first) continue;
      double closes_at = s.first_data + options_.deadline;
      if (now >= closes_at) {
        Send out;
        if (close(static_cast<int>(k), DEADLINE, now, out)) sends.push_back(std::move(out));
        continue;
      }
      wake = std::min(wake, closes_at);
      if (!s.pending.empty()) {
        double flush_at = s.last_ack + options_.ack_delay;
        if (now >= flush_at) {
          Send out;
          if (flush(static_cast<int>(k), now, out)) sends.push_back(std::move(out));
        } else {
          wake = std::min(wake, flush_at);
        }
      }
    }
    return wake;
  }

 private:
  bool layer_met(size_t i, uint64_t have) const {
    return static_cast<double>(have) >= required_[i] * sizes_[i] - 1e-9;
  }

  bool meets(const SenderState& s) const {
    if (!options_.tensor_scope) return s.layers_short == 0;
    if (s.whole_short) return false;
    return static_cast<double>(s.pooled_have) >= pooled_need_ - 1e-9;
  }

  static void clear_acks(SenderState& s) {
    s.pending.clear();
    s.pending_qdelay_us = s.pending_qdepth = 0;
  }

  // 1 placed, 0 duplicate, -1 does not fit the plan, -2 NaN or infinity (nothing written).
  int place(SenderState& s, const Data& d) {
    if (d.layer < 0 || static_cast<size_t>(d.layer) >= sizes_.size()) return -1;
    const size_t L = static_cast<size_t>(d.layer);
    if (d.seq >= counts_[L]) return -1;
    const uint64_t size = chunk_elems_[L];
    const uint64_t off = static_cast<uint64_t>(d.seq) * size;
    const uint64_t count = std::min<uint64_t>(size, sizes_[L] - off);
    if (d.offset != off || d.payload_len != 4 * count) return -1;
    Layer& layer = s.layers[L];
    if (layer.chunks[d.seq]) return 0;
    const uint8_t* p = d.payload;
    for (uint64_t i = 0; i < count; ++i) {
      uint32_t bits = load_be32(p + 4 * i);
      if ((bits & 0x7f800000u) == 0x7f800000u) return -2;
    }
    float* dst = layer.values + off;
    for (uint64_t i = 0; i < count; ++i) {
      uint32_t bits = load_be32(p + 4 * i);
      std::memcpy(dst + i, &bits, 4);
    }
    std::memset(layer.delivered + off, 1, count);
    layer.chunks[d.seq] = 1;
    uint64_t have = s.delivered_elems[L] += count;
    if (!s.layer_met[L] && layer_met(L, have)) {
      s.layer_met[L] = 1;
      s.layers_short--;
    }
    if (required_[L] >= 1.0) {
      if (have == sizes_[L]) s.whole_short--;
    } else {
      s.pooled_have += count;
    }
    if (have == sizes_[L]) s.layers_complete++;
    return 1;
  }

  static uint32_t load_be32(const uint8_t* p) {
    return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
           (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
  }

  std::vector<uint32_t> sizes_, chunk_elems_, counts_;
  std::vector<double> required_;
  Options options_;
  std::vector<int> ranks_;
  std::unordered_map<int, int> index_;
  std::vector<SenderState> senders_;
  double opened_;
  double pooled_need_ = 0.0;
  size_t closed_count_ = 0;
  bool has_finished_ = false;
  double finished_ = 0.0;
};

}  // namespace gradlane
