// Background traffic for gradlane's simulations (DLCP's loaded fabric): TCP flows between
// random pairs of hosts, arriving as one Poisson process, each flow's size drawn from an
// empirical CDF (linear between its points), each flow timed from its arrival (the sender's
// connect) until the receiver has every byte: its flow completion time (FCT). Arrival gaps,
// endpoints and sizes come from four numbered ns-3 streams (`stream` .. `stream` + 3), so the
// repetition's run number fixes which flows arrive when, whatever else the simulation draws.
// A sender keeps at most kBuffered bytes in its socket (many BDPs at 10 Gb/s and microsecond
// RTTs), so that after `StopSendingAt` a flow that is not done stops within that much.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ns3/inet-socket-address.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/random-variable-stream.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-socket-factory.h"

namespace gradlane_sim {

class TcpBackground {
 public:
  static constexpr uint32_t kBuffered = 256 * 1024;

  // Flows arrive at `flows_per_s` from `start_s` until `stop_s` (simulated seconds) to TCP
  // port `port` of their receivers.
  TcpBackground(uint16_t port, double flows_per_s, double start_s, double stop_s, int64_t stream)
      : port_(port), start_s_(start_s), stop_s_(stop_s),
        gap_(ns3::CreateObject<ns3::ExponentialRandomVariable>()),
        pick_src_(ns3::CreateObject<ns3::UniformRandomVariable>()),
        pick_dst_(ns3::CreateObject<ns3::UniformRandomVariable>()),
        pick_size_(ns3::CreateObject<ns3::UniformRandomVariable>()) {
    gap_->SetAttribute("Mean", ns3::DoubleValue(1.0 / flows_per_s));
    gap_->SetStream(stream);
    pick_src_->SetStream(stream + 1);
    pick_dst_->SetStream(stream + 2);
    pick_size_->SetStream(stream + 3);
  }

  // A host that sends and receives background flows with ns-3's TCP `socket_type` (e.g.
  // ns3::TcpDctcp): every TCP socket made on the node from now on is of that type.
  void AddHost(ns3::Ptr<ns3::Node> node, ns3::Ipv4Address addr, const std::string& socket_type) {
    node->GetObject<ns3::TcpL4Protocol>()->SetAttribute(
        "SocketType", ns3::TypeIdValue(ns3::TypeId::LookupByName(socket_type)));
    nodes_.push_back(node);
    addrs_.push_back(addr);
  }

  // From `at_s` on, senders hand no more bytes to their sockets (the measurement is over).
  void StopSendingAt(double at_s) {
    ns3::Simulator::Schedule(ns3::Seconds(at_s), &TcpBackground::StopSending, this);
  }

  // One point of the size CDF: P(size <= bytes) = cdf. Points in increasing order, the last at 1.
  void AddSizePoint(double bytes, double cdf) { cdf_.push_back({bytes, cdf}); }

  void Start() {
    for (auto& node : nodes_) {
      auto listener = ns3::Socket::CreateSocket(node, ns3::TcpSocketFactory::GetTypeId());
      listener->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port_));
      listener->Listen();
      listener->SetAcceptCallback(ns3::MakeNullCallback<bool, ns3::Ptr<ns3::Socket>, const ns3::Address&>(),
                                  ns3::MakeCallback(&TcpBackground::OnAccept, this));
      listeners_.push_back(listener);
    }
    ns3::Simulator::Schedule(ns3::Seconds(start_s_ + gap_->GetValue()), &TcpBackground::Arrive, this);
  }

  // Per flow, in arrival order: arrival time, completion time (-1: not complete), bytes, and
  // the indexes (AddHost order) of its sender and receiver.
  std::vector<double> start, end;
  std::vector<uint64_t> size;
  std::vector<uint32_t> src, dst;
  uint64_t completed = 0;

 private:
  struct Flow {
    ns3::Ptr<ns3::Socket> sender, receiver;
    uint64_t to_send = 0, received = 0;
    uint32_t empty_room = 0;      // the sender's free buffer before its first byte
  };

  void StopSending() { stopped_ = true; }

  double DrawSize() {
    double u = pick_size_->GetValue(0.0, 1.0);
    double prev_bytes = cdf_.front().first, prev_p = 0.0;
    for (const auto& [bytes, p] : cdf_) {
      if (u <= p) {
        if (p <= prev_p) return bytes;
        return prev_bytes + (bytes - prev_bytes) * (u - prev_p) / (p - prev_p);
      }
      prev_bytes = bytes;
      prev_p = p;
    }
    return cdf_.back().first;
  }

  void Arrive() {
    double now = ns3::Simulator::Now().GetSeconds();
    if (now >= stop_s_) return;
    uint32_t n = nodes_.size();
    uint32_t a = pick_src_->GetInteger(0, n - 1);
    uint32_t b = pick_dst_->GetInteger(0, n - 2);
    if (b >= a) b++;                                     // a receiver other than the sender
    uint64_t bytes = std::max<uint64_t>(1, static_cast<uint64_t>(DrawSize() + 0.5));
    size_t id = start.size();
    start.push_back(now);
    end.push_back(-1.0);
    size.push_back(bytes);
    src.push_back(a);
    dst.push_back(b);
    Flow f;
    f.to_send = bytes;
    f.sender = ns3::Socket::CreateSocket(nodes_[a], ns3::TcpSocketFactory::GetTypeId());
    f.sender->Bind();
    ns3::Address local;
    f.sender->GetSockName(local);
    uint16_t sport = ns3::InetSocketAddress::ConvertFrom(local).GetPort();
    by_origin_[{addrs_[a].Get(), sport}] = id;
    f.sender->SetConnectCallback(ns3::MakeCallback(&TcpBackground::OnConnected, this),
                                 ns3::MakeNullCallback<void, ns3::Ptr<ns3::Socket>>());
    f.sender->SetSendCallback(ns3::MakeCallback(&TcpBackground::OnSendSpace, this));
    by_socket_[ns3::PeekPointer(f.sender)] = id;
    flows_.push_back(f);
    f.sender->Connect(ns3::InetSocketAddress(addrs_[b], port_));
    ns3::Simulator::Schedule(ns3::Seconds(gap_->GetValue()), &TcpBackground::Arrive, this);
  }

  void OnConnected(ns3::Ptr<ns3::Socket> s) { Pump(s); }
  void OnSendSpace(ns3::Ptr<ns3::Socket> s, uint32_t) { Pump(s); }

  void Pump(ns3::Ptr<ns3::Socket> s) {
    auto it = by_socket_.find(ns3::PeekPointer(s));
    if (it == by_socket_.end()) return;
    Flow& f = flows_[it->second];
    if (f.empty_room == 0) f.empty_room = s->GetTxAvailable();
    while (f.to_send > 0 && !stopped_) {
      uint32_t free = s->GetTxAvailable();
      uint32_t used = f.empty_room > free ? f.empty_room - free : 0;
      uint32_t room = used < kBuffered ? std::min(free, kBuffered - used) : 0;
      if (room == 0) return;
      uint32_t n = static_cast<uint32_t>(std::min<uint64_t>({f.to_send, room, 65536}));
      int sent = s->Send(ns3::Create<ns3::Packet>(n));
      if (sent <= 0) return;
      f.to_send -= sent;
    }
  }

  void OnAccept(ns3::Ptr<ns3::Socket> s, const ns3::Address& from) {
    auto inet = ns3::InetSocketAddress::ConvertFrom(from);
    auto it = by_origin_.find({inet.GetIpv4().Get(), inet.GetPort()});
    if (it == by_origin_.end()) return;
    flows_[it->second].receiver = s;
    by_receiver_[ns3::PeekPointer(s)] = it->second;
    by_origin_.erase(it);
    s->SetRecvCallback(ns3::MakeCallback(&TcpBackground::OnRecv, this));
    OnRecv(s);
  }

  void OnRecv(ns3::Ptr<ns3::Socket> s) {
    auto it = by_receiver_.find(ns3::PeekPointer(s));
    if (it == by_receiver_.end()) return;
    size_t id = it->second;
    Flow& f = flows_[id];
    while (auto p = s->Recv()) {
      if (p->GetSize() == 0) break;
      f.received += p->GetSize();
    }
    if (f.received < size[id] || end[id] >= 0) return;
    end[id] = ns3::Simulator::Now().GetSeconds();
    completed++;
    by_receiver_.erase(it);
    by_socket_.erase(ns3::PeekPointer(f.sender));
    f.sender->Close();
    s->Close();
    f.sender = nullptr;
    f.receiver = nullptr;
  }

  uint16_t port_;
  bool stopped_ = false;
  double start_s_, stop_s_;
  ns3::Ptr<ns3::ExponentialRandomVariable> gap_;
  ns3::Ptr<ns3::UniformRandomVariable> pick_src_, pick_dst_, pick_size_;
  std::vector<std::pair<double, double>> cdf_;
  std::vector<ns3::Ptr<ns3::Node>> nodes_;
  std::vector<ns3::Ipv4Address> addrs_;
  std::vector<ns3::Ptr<ns3::Socket>> listeners_;
  std::vector<Flow> flows_;
  std::map<std::pair<uint32_t, uint16_t>, size_t> by_origin_;
  std::map<ns3::Socket*, size_t> by_socket_, by_receiver_;
};

}  // namespace gradlane_sim
