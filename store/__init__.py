"""MongoDB through PyMongo's AsyncMongoClient: collections, indexes, validators, publish, queries."""
