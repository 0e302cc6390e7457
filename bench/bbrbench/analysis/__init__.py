"""Turning a run's files into numbers and pictures: run data, metrics, statistics, tables, plots, the
HTML page, the share model. Reads results; never touches the system."""
