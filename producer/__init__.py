"""Event sources: the clickstream generator and the Kafka publisher with its ack log."""
