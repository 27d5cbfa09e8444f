"""Typed errors of the experiments harness: each one is a one-line message for the user."""
from __future__ import annotations


class ExperimentError(Exception):
    """Base class: an experiment could not be configured or run."""


class ConfigError(ExperimentError):
    """An experiment config (YAML) or a command-line option is wrong; the message names what."""


class UnknownExperimentError(ExperimentError):
    """No registered experiment has that name."""


class ResumeError(ExperimentError):
    """A results directory cannot be resumed."""
