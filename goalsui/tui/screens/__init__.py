"""Screens of the console."""
