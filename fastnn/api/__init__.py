"""fastnn's public API machinery: hook specification, registry, devices, tensors, ops."""
