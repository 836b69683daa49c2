"""The studies behind the scientific figures of BENCHMARKS.md (corpus, realdock, peers): code, small tables and
their data as digest-checked archives (``python -m studies.archive unpack``)."""
