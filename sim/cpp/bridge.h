// UDP sockets whose datagrams a Python driver reads and writes (sim/lossy.py drives gradlane's
// sans-IO transport with them). Every datagram that arrives is queued (host, source address and
// port, TOS byte as received, bytes) and the running simulation pauses once the current instant's
// events are done (Simulator::Stop), so the driver handles it at its simulated arrival time;
// WakeAt(t) pauses it at time t (the driver's next timer). Sending puts the bytes on the host's
// socket with the given TOS at once.
//
// Both ways datagrams cross in batches, one call for all of them (a call into C++ from Python
// costs microseconds, as much as the driver's own work on a datagram): a batch is records of a
// 13-byte head in the machine's byte order, host (u32), IPv4 address (u32: the destination when
// sending, the source when received), port (u16), TOS (u8), length (u16), then the bytes.
//
// Host software time (SetServiceTime, off unless set): each host is then one serial server that
// spends a fixed time on every datagram it receives (before the driver sees it) and on every one
// it sends (before it reaches the socket), in arrival order, as the single-threaded Python agent
// does; a datagram waits while the host is busy with earlier ones.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ns3/event-id.h"
#include "ns3/inet-socket-address.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/udp-socket-factory.h"

namespace gradlane_sim {

class UdpBridge {
 public:
  // A UDP socket on `node` bound to `port`; its index is the host of the batches' records.
  uint32_t AddHost(ns3::Ptr<ns3::Node> node, uint16_t port) {
    auto sock = ns3::Socket::CreateSocket(node, ns3::UdpSocketFactory::GetTypeId());
    sock->SetIpRecvTos(true);
    sock->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port));
    sock->SetRecvCallback(ns3::MakeCallback(&UdpBridge::OnRecv, this));
    socks_.push_back(sock);
    tos_.push_back(-1);
    rx_ns_.push_back(0);
    tx_ns_.push_back(0);
    busy_until_ns_.push_back(0);
    return socks_.size() - 1;
  }

  // The host's software time per received and per sent datagram, in seconds (0, 0: none).
  void SetServiceTime(uint32_t host, double rx_s, double tx_s) {
    rx_ns_.at(host) = static_cast<int64_t>(std::llround(rx_s * 1e9));
    tx_ns_.at(host) = static_cast<int64_t>(std::llround(tx_s * 1e9));
  }

  static constexpr size_t kHead = 13;

  // Sends every record of `batch` (see the top of this file), in order.
  void SendBatch(const std::string& batch) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(batch.data());
    const uint8_t* end = p + batch.size();
    while (p + kHead <= end) {
      uint32_t host, addr;
      uint16_t port, len;
      std::memcpy(&host, p, 4);
      std::memcpy(&addr, p + 4, 4);
      std::memcpy(&port, p + 8, 2);
      uint8_t tos = p[10];
      std::memcpy(&len, p + 11, 2);
      p += kHead;
      if (p + len > end) {
        send_errors++;
        return;
      }
      Send(host, p, len, ns3::Ipv4Address(addr), port, tos);
      p += len;
    }
  }

  // The bytes of the datagrams received since the last TakeInbox, as records.
  size_t InboxSize() const { return inbox_.size(); }

  // Copies the received records into `out` (InboxSize() bytes) and empties the inbox.
  void TakeInbox(uint8_t* out) {
    std::memcpy(out, inbox_.data(), inbox_.size());
    inbox_.clear();
  }

  // Pause the simulation at absolute time `at_s`, rounded up to ns-3's nanosecond (replaces the
  // previous wake); `woke` tells that this pause came from the wake, not from an arrival.
  void WakeAt(double at_s) {
    ns3::Simulator::Cancel(wake_);
    woke = false;
    int64_t delay = static_cast<int64_t>(std::ceil(at_s * 1e9)) - ns3::Simulator::Now().GetNanoSeconds();
    wake_ = ns3::Simulator::Schedule(ns3::NanoSeconds(delay > 0 ? delay : 0), &UdpBridge::Wake, this);
  }

  uint64_t sent = 0, send_errors = 0, received = 0;
  bool woke = false;

 private:
  void Send(uint32_t host, const uint8_t* bytes, uint16_t len, ns3::Ipv4Address dst, uint16_t port, uint8_t tos) {
    auto p = ns3::Create<ns3::Packet>(bytes, len);
    int64_t ready = Serve(host, tx_ns_.at(host));
    if (ready < 0) {
      SendNow(host, p, dst, port, tos);
      return;
    }
    ns3::Simulator::Schedule(ns3::NanoSeconds(ready - ns3::Simulator::Now().GetNanoSeconds()),
                             &UdpBridge::SendNow, this, host, p, dst, port, tos);
  }

  // With a service time: the time (ns) the host is done with one more datagram, and busy until
  // then; without: -1 (at once).
  int64_t Serve(uint32_t host, int64_t service_ns) {
    if (service_ns <= 0) return -1;
    int64_t now = ns3::Simulator::Now().GetNanoSeconds();
    int64_t start = busy_until_ns_[host] > now ? busy_until_ns_[host] : now;
    busy_until_ns_[host] = start + service_ns;
    return busy_until_ns_[host];
  }

  void SendNow(uint32_t host, ns3::Ptr<ns3::Packet> p, ns3::Ipv4Address dst, uint16_t port, uint8_t tos) {
    auto& sock = socks_.at(host);
    if (tos_[host] != tos) {
      sock->SetIpTos(tos);
      tos_[host] = tos;
    }
    if (sock->SendTo(p, 0, ns3::InetSocketAddress(dst, port)) >= 0) sent++;
    else send_errors++;
  }

  void Pause() {
    pause_pending_ = false;
    ns3::Simulator::Stop();
  }

  void Wake() {
    woke = true;
    ns3::Simulator::Stop();
  }

  void OnRecv(ns3::Ptr<ns3::Socket> s) {
    uint32_t host = 0;
    while (host < socks_.size() && socks_[host] != s) host++;
    ns3::Address from;
    while (auto p = s->RecvFrom(from)) {
      if (p->GetSize() == 0) break;
      uint16_t len = static_cast<uint16_t>(p->GetSize());
      ns3::SocketIpTosTag tag;
      uint8_t tos = p->RemovePacketTag(tag) ? tag.GetTos() : 0;
      auto inet = ns3::InetSocketAddress::ConvertFrom(from);
      uint32_t src = inet.GetIpv4().Get();
      uint16_t port = inet.GetPort();
      std::string record(kHead + len, '\0');
      uint8_t* rec = reinterpret_cast<uint8_t*>(&record[0]);
      std::memcpy(rec, &host, 4);
      std::memcpy(rec + 4, &src, 4);
      std::memcpy(rec + 8, &port, 2);
      rec[10] = tos;
      std::memcpy(rec + 11, &len, 2);
      p->CopyData(rec + kHead, len);
      int64_t ready = Serve(host, rx_ns_[host]);
      if (ready < 0) {
        Deliver(record);
      } else {
        ns3::Simulator::Schedule(ns3::NanoSeconds(ready - ns3::Simulator::Now().GetNanoSeconds()),
                                 &UdpBridge::Deliver, this, record);
      }
    }
  }

  // Queues one received record for the driver and pauses the simulation once this instant's
  // events are done.
  void Deliver(std::string record) {
    inbox_ += record;
    received++;
    if (!pause_pending_) {
      pause_pending_ = true;
      ns3::Simulator::ScheduleNow(&UdpBridge::Pause, this);
    }
  }

  std::string inbox_;
  std::vector<ns3::Ptr<ns3::Socket>> socks_;
  std::vector<int> tos_;
  std::vector<int64_t> rx_ns_, tx_ns_, busy_until_ns_;   // SetServiceTime, and when each host is free
  ns3::EventId wake_;
  bool pause_pending_ = false;
};

}  // namespace gradlane_sim
