"""The network layer: the only room that opens sockets, runs TLS and speaks to the event loop."""
