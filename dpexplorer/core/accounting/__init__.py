"""Composition of guarantees under every theorem (basic, advanced, KOV, zCDP, RDP, PLD).

Modules: ``guarantees`` (the guarantee types, the lead's contract), ``compose`` (the public API:
compose, epsilon_at, delta_at, privacy_profile, pld_of), ``pld`` (the tight accountant),
``classic`` (basic, advanced, optimal), ``single`` (one-mechanism closed forms and conversions),
``validate`` (input checks). Nothing is imported here, to keep start-up cheap."""
