"""Tests of the shipped configs."""
