"""TensorFlow imported for a CPU engine: one intra-op and one inter-op thread, no GPU."""


def single_threaded_tensorflow():
    """Both thread pools are settable only before the first op; hiding the GPUs keeps a CPU
    engine on the CPU, where TensorFlow would otherwise place ops on a visible GPU."""
    import tensorflow as tf

    try:
        tf.config.set_visible_devices([], "GPU")
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:
        pass  # the runtime is already initialized in this process: its thread pools are fixed
    return tf
