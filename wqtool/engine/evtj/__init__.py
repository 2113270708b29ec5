"""prinbee's binary event journal (EVTJ): discovery, the loader's view (reader), replay to the live events,
verify. Spec: ``docs/formats/snap-journals.md`` Part C; declarations in ``wqtool.formats.evtj``."""
