"""Reading finished (or running) run directories: compare, plot, report, trace (`pecan runs ...`)."""
