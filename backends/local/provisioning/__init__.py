"""The request state machine: reconciling, settling, launch candidates (offerings), readiness and quotas."""
