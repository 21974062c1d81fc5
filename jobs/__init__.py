"""What stream and batch share: config, Spark session, tables, transformations, I/O, checks."""
