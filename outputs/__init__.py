"""Output sinks and reports (CCMOD's ``otrace``)."""
