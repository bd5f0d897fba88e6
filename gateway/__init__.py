"""What a training or serving container can reach: the engine-wide services network, the
forwarder on its gateway address that carries containers' traffic to the API, data plane and S3, and the
AWS environment (region, endpoints, container credentials) a container is given."""
