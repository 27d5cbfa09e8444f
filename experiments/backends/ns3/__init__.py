"""The ns-3 backend (`python -m experiments NAME --backend ns3`): `harness` (setup, one arm's
repetition in a forked child, the records), `simulation` (what an experiment declares), and per
simulated experiment the module that runs its arms: `ltp_incast` (the TCP arms' rounds and the
lossy arms', `lossy_arm`), `pcn`, `regimes`, `dblp_microbursts`, `dlcp_ablation`. Everything
below them is the `sim` library; nothing here imports `topo`.
"""
