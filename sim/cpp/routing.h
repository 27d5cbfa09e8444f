// Forwarding of a simulated gradlane switch from the controller's route entries
// (p4src/ingress.p4 ipv4_lpm with ecmp_selector): a /32 route per host to one port or to an
// equal-cost group; gradient DATA of a job with spraying on picks a member at random per
// packet, everything else by a hash of its 5-tuple (per flow, so TCP is never reordered).
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ns3/ipv4-routing-protocol.h"
#include "ns3/ipv4-route.h"
#include "ns3/ipv4.h"
#include "ns3/random-variable-stream.h"
#include "switch.h"

namespace gradlane_sim {

class SwitchRouting : public ns3::Ipv4RoutingProtocol {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("gradlane_sim::SwitchRouting")
                                 .SetParent<ns3::Ipv4RoutingProtocol>()
                                 .AddConstructor<SwitchRouting>();
    return tid;
  }
  // The hash salt stands in for what varies per run on real hosts (random ephemeral ports,
  // which ns-3 allocates in order): other seeds put the same flows on other paths.
  SwitchRouting()
      : rand_(ns3::CreateObject<ns3::UniformRandomVariable>()), salt_(rand_->GetInteger(0, 0xFFFFFFFFu)) {}

  void Configure(SwitchState* state) { state_ = state; }
  // P4 port -> the ns-3 interface it is and the neighbour's address on that link.
  void SetPort(uint32_t port, uint32_t interface, ns3::Ipv4Address next_hop) {
    ports_[port] = {interface, next_hop};
  }
  // A /32 route: destination -> its member ports (one, or an equal-cost group).
  void AddRoute(ns3::Ipv4Address dst, const std::vector<uint32_t>& ports) { routes_[dst.Get()] = ports; }

  uint64_t sprayed = 0, hashed = 0, unrouted = 0;

  ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet>, const ns3::Ipv4Header& header,
                                       ns3::Ptr<ns3::NetDevice>, ns3::Socket::SocketErrno& err) override {
    auto route = Lookup(header, nullptr);
    err = route ? ns3::Socket::ERROR_NOTERROR : ns3::Socket::ERROR_NOROUTETOHOST;
    return route;
  }

  bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header, ns3::Ptr<const ns3::NetDevice>,
                  const UnicastForwardCallback& ucb, const MulticastForwardCallback&,
                  const LocalDeliverCallback&, const ErrorCallback&) override {
    auto route = Lookup(header, p);
    if (!route) return false;   // the next protocol of the list (local delivery, ns-3's routes)
    ucb(route, p, header);
    return true;
  }

  void NotifyInterfaceUp(uint32_t) override {}
  void NotifyInterfaceDown(uint32_t) override {}
  void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { ipv4_ = ipv4; }
  void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper>, ns3::Time::Unit) const override {}

 private:
  struct Port { uint32_t interface; ns3::Ipv4Address next_hop; };

  ns3::Ptr<ns3::Ipv4Route> Lookup(const ns3::Ipv4Header& header, ns3::Ptr<const ns3::Packet> p) {
    auto it = routes_.find(header.GetDestination().Get());
    if (it == routes_.end() || it->second.empty()) { unrouted++; return nullptr; }
    const auto& members = it->second;
    uint32_t pick = 0;
    if (members.size() > 1) {
      Gradient g{};
      bool data = p && state_ && SwitchState::ParseGradient(header, p, g) && g.kind == kKindData &&
                  !(g.flags & kFlagPlain) && state_->Sprays(g.job);
      if (data) {
        pick = rand_->GetInteger(0, members.size() - 1);
        sprayed++;
      } else {
        pick = FlowHash(header, p) % members.size();
        hashed++;
      }
    }
    const Port& port = ports_.at(members[pick]);
    auto route = ns3::Create<ns3::Ipv4Route>();
    route->SetDestination(header.GetDestination());
    route->SetGateway(port.next_hop);
    route->SetOutputDevice(ipv4_->GetNetDevice(port.interface));
    route->SetSource(ipv4_->GetAddress(port.interface, 0).GetLocal());
    return route;
  }

  uint32_t FlowHash(const ns3::Ipv4Header& h, ns3::Ptr<const ns3::Packet> p) const {
    uint32_t l4 = 0;
    if (p && (h.GetProtocol() == 6 || h.GetProtocol() == 17) && p->GetSize() >= 4) {
      uint8_t b[4];
      p->CopyData(b, 4);
      l4 = (uint32_t(b[0]) << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
    }
    uint64_t x = (uint64_t(h.GetSource().Get()) << 32) ^ h.GetDestination().Get() ^
                 (uint64_t(h.GetProtocol()) << 56) ^ (uint64_t(l4) * 0x9E3779B97F4A7C15ull) ^
                 (uint64_t(salt_) << 20);
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33;
    return uint32_t(x);
  }

  SwitchState* state_ = nullptr;
  ns3::Ptr<ns3::Ipv4> ipv4_;
  ns3::Ptr<ns3::UniformRandomVariable> rand_;
  uint32_t salt_;
  std::unordered_map<uint32_t, Port> ports_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> routes_;
};

}  // namespace gradlane_sim
