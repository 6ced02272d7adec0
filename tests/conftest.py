"""Shared test settings: hypothesis without deadlines (CI machines are shared and noisy)."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, max_examples=40,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "default")
