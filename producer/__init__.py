"""Event sources: the clickstream and orders generators and the Kafka publisher with its ack log."""
