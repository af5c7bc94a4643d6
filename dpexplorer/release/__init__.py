"""Release: exact secure samplers, the persistent budget ledger, export with provenance.

- :mod:`.samplers` exact Bernoulli(exp(-gamma)), discrete Laplace, discrete Gaussian (CKS 2020)
- :mod:`.ledger` the SQLite budget ledger (:class:`~.ledger.Ledger`)
- :mod:`.plans` the exact release path of every mechanism (or a refusal)
- :mod:`.export` atomic CSV / JSON / provenance files
- :mod:`.release` one release end to end (:func:`~.release.release_one`), for the CLI and GUI

Imports nothing of ``dpexplorer.gui``."""
