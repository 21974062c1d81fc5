"""Local services (Kafka, and later PostgreSQL, Airflow, Spark standalone) and setup helpers."""
