import os

# Keep tests deterministic and quiet; helpers force several host devices in subprocesses only.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("OFIJAX_PROGRESS", "0")
