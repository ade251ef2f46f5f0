"""The emulator fixtures of support.emulator, available to every test here."""

from support.emulator import any_emulator, demo_emulator, emulator, http_emulator_server

__all__ = ["any_emulator", "demo_emulator", "emulator", "http_emulator_server"]
