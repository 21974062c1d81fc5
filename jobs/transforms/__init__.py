"""Pure DataFrame -> DataFrame functions. Stream and batch call the same ones."""
