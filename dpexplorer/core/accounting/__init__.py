"""Composition of guarantees under every theorem (basic, advanced, KOV, zCDP, RDP, PLD)."""
