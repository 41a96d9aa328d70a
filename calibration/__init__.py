"""Calibration: measure real runs, fit cost-model parameters, write device YAML with
provenance (issue #7). The simulator never imports this package; it reads the files
calibration writes under ``scenarios/devices/``.
"""
