"""DynamoDB records (single table)."""
