"""gradlane as a PyTorch DDP communication hook: every gradient bucket goes to a parameter
server over gradlane's transport and comes back aggregated (`hook`), served by `server`,
started on loopback with its ranks by `launch`; `layout` and `control` are what the hook and
the server agree on before the first bucket."""
