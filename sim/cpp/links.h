// Random loss on a link, as the topology's `loss_pct` asks: ns-3's RateErrorModel (per packet)
// on the receiving device of each impaired direction, and a count of what it dropped. Each
// model draws from its own numbered ns-3 stream (with automatic numbers the draws changed
// between simulations of one process), so the stream and the repetition's run number fix the
// draws; which packets meet them depends on the traffic (docs/ns3.md: lossy runs do not repeat
// exactly). A burst (`StartBurst`) raises the rate of the models attached as burstable for a
// while, and the models count what they drop during bursts apart.
#pragma once
#include <cstdint>
#include <vector>

#include "ns3/error-model.h"
#include "ns3/net-device.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"

namespace gradlane_sim {

class LinkLoss {
 public:
  // Drop each packet `dev` receives with probability `rate` (0..1), drawn from stream `stream`;
  // a `burstable` end takes part in bursts.
  void Attach(ns3::Ptr<ns3::NetDevice> dev, double rate, int64_t stream, bool burstable = false) {
    auto model = ns3::CreateObject<ns3::RateErrorModel>();
    model->SetUnit(ns3::RateErrorModel::ERROR_UNIT_PACKET);
    model->SetRate(rate);
    model->AssignStreams(stream);
    dev->SetAttribute("ReceiveErrorModel", ns3::PointerValue(model));
    dev->TraceConnectWithoutContext("PhyRxDrop", ns3::MakeCallback(&LinkLoss::Dropped, this));
    if (burstable) {
      bursting_.push_back(model);
      base_.push_back(rate);
    }
  }

  // From now for `duration_s` simulated seconds, the burstable ends drop with probability
  // `rate`; then their own rate again. A burst started during another replaces it.
  void StartBurst(double rate, double duration_s) {
    for (auto& model : bursting_) model->SetRate(rate);
    in_burst = true;
    bursts++;
    end_.Cancel();
    end_ = ns3::Simulator::Schedule(ns3::Seconds(duration_s), &LinkLoss::EndBurst, this);
  }

  uint64_t dropped = 0;
  uint64_t burst_dropped = 0;   // of `dropped`, those during a burst
  uint64_t bursts = 0;
  bool in_burst = false;

 private:
  void EndBurst() {
    for (size_t i = 0; i < bursting_.size(); i++) bursting_[i]->SetRate(base_[i]);
    in_burst = false;
  }
  void Dropped(ns3::Ptr<const ns3::Packet>) {
    dropped++;
    if (in_burst) burst_dropped++;
  }

  std::vector<ns3::Ptr<ns3::RateErrorModel>> bursting_;
  std::vector<double> base_;
  ns3::EventId end_;
};

}  // namespace gradlane_sim
