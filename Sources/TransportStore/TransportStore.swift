// Placeholder: the TransportStore module is built in its own issue.
