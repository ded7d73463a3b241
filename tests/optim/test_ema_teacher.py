"""hs.EMA as a teacher: init="initial" against TF1's ExponentialMovingAverage, a momentum
teacher inside the step against a hand-written update, and save/restore."""

import contextlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs

RNG = np.random.default_rng(5)
W0 = RNG.normal(size=(4, 3)).astype("float32")
B0 = RNG.normal(size=(3,)).astype("float32")
GRADS = [
    (RNG.normal(size=(4, 3)).astype("float32"), RNG.normal(size=(3,)).astype("float32"))
    for _ in range(25)
]
DECAY = 0.99
X = RNG.normal(size=(6, 8, 3)).astype("float32")
TAU = "1 - 0.004 * (cos(pi * step / 6) + 1) / 2"  # BYOL's cosine momentum, K = 6


def tf1_run():
    """TF1: SGD with global_step, then ExponentialMovingAverage(decay, num_updates=step)."""
    graph = tf.Graph()
    with graph.as_default():
        w = tf.compat.v1.get_variable("w", initializer=W0, use_resource=True)
        b = tf.compat.v1.get_variable("b", initializer=B0, use_resource=True)
        gw = tf.compat.v1.placeholder(tf.float32, (4, 3))
        gb = tf.compat.v1.placeholder(tf.float32, (3,))
        step = tf.compat.v1.train.get_or_create_global_step()
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).apply_gradients(
            [(gw, w), (gb, b)], global_step=step
        )
        ema = tf.compat.v1.train.ExponentialMovingAverage(DECAY, num_updates=step)
        with tf.control_dependencies([train]):
            averaged = ema.apply([w, b])
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            rows = []
            for g_w, g_b in GRADS:
                session.run(averaged, {gw: g_w, gb: g_b})
                rows.append(session.run([w, b, ema.average(w), ema.average(b)]))
    return rows


@pytest.mark.parametrize("compiled", [False, True])
def test_initial_ema_equals_tf1_exponential_moving_average_with_num_updates(compiled):
    opt = hs.scheduled(keras.optimizers.SGD(0.1))
    variables = [keras.Variable(W0), keras.Variable(B0)]
    # num_updates is TF1's global step, read after its increment: the clock after the update
    ema = hs.EMA(opt, decay=f"min({DECAY}, (1 + step) / (10 + step))", init="initial")

    def step(g_w, g_b):
        opt.apply([g_w, g_b], variables)
        ema.update()

    step = tf.function(step) if compiled else step
    expected = tf1_run()
    for (g_w, g_b), row in zip(GRADS, expected, strict=True):
        step(tf.constant(g_w), tf.constant(g_b))
        found = [v.numpy() for v in variables] + [a.numpy() for a in ema.averages]
        for value, oracle in zip(found, row, strict=True):
            np.testing.assert_array_equal(value, oracle)


def test_copy_ema_differs_from_tf1_at_the_first_update():
    """The oracle can tell the two starts apart: "copy" starts at the updated weights."""
    opt = hs.scheduled(keras.optimizers.SGD(0.1))
    variables = [keras.Variable(W0), keras.Variable(B0)]
    ema = hs.EMA(opt, decay=f"min({DECAY}, (1 + step) / (10 + step))")
    opt.apply([tf.constant(g) for g in GRADS[0]], variables)
    ema.update()
    oracle = tf1_run()[0]
    assert not np.array_equal(ema.averages[0].numpy(), oracle[2])
    np.testing.assert_array_equal(ema.averages[0].numpy(), variables[0].numpy())


def student_net(seed=1):
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(2)]
    )
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(size=w.shape).astype("float32") for w in model.get_weights()])
    return model


def byol_loss(student, teacher, x):
    """A self-distillation loss: the student regresses the teacher's (fixed) output."""
    target = keras.ops.stop_gradient(teacher(x))
    return keras.ops.mean((student(x) - target) ** 2) + 0.1 * keras.ops.mean(student(x) ** 2)


def hand_written(steps, start_teacher=None):
    """Plain Keras SGD, and teacher = tau * teacher + (1 - tau) * student after each update."""
    student = student_net()
    teacher = keras.models.clone_model(student)
    teacher.set_weights(student.get_weights() if start_teacher is None else start_teacher)
    opt = keras.optimizers.SGD(0.05)
    tau_of = hs.parse(TAU)

    @tf.function
    def step(x, tau):
        with tf.GradientTape() as tape:
            loss = byol_loss(student, teacher, x)
        grads = tape.gradient(loss, student.trainable_variables)
        opt.apply(grads, student.trainable_variables)
        for t, s in zip(teacher.trainable_variables, student.trainable_variables, strict=True):
            t.assign(tau * t + (1 - tau) * s)

    taus = []
    for i in range(steps):
        tau = tau_of(i)  # the step of iteration i
        taus.append(float(tau))
        step(tf.constant(X[i]), tau)
    return student.get_weights(), teacher.get_weights(), taus


def test_teacher_inside_a_custom_loop_follows_the_hand_written_momentum_update():
    student = student_net()
    opt = hs.scheduled(keras.optimizers.SGD(0.05))
    ema = hs.EMA(opt, decay=TAU, init="initial", form="momentum")
    teacher = ema.network(student)
    assert ema.network(student) is teacher
    taus = []

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = byol_loss(student, teacher, x)
        grads = tape.gradient(loss, student.trainable_variables)
        opt.apply(grads, student.trainable_variables)
        return ema.decay.value  # BYOL's order: tau read after the update

    for i in range(6):
        taus.append(float(step(tf.constant(X[i]))))
    s_expected, t_expected, tau_expected = hand_written(6)
    for found, expected in zip(teacher.get_weights(), t_expected, strict=True):
        np.testing.assert_array_equal(found, expected)
    for found, expected in zip(student.get_weights(), s_expected, strict=True):
        np.testing.assert_array_equal(found, expected)
    # one optimizer and no `clock.iteration()`: after apply the clock moved on (as before)
    assert taus == [float(hs.parse(TAU)(i + 1)) for i in range(6)]
    assert taus != tau_expected


def test_teacher_inside_fit_follows_the_hand_written_momentum_update_and_tau_reads_its_step():
    student = student_net()
    opt = hs.scheduled(keras.optimizers.SGD(0.05))
    ema = hs.EMA(opt, decay=TAU, init="initial", form="momentum")
    teacher = ema.network(student)
    read = []

    class BYOL(keras.Model):
        def __init__(self):
            super().__init__()
            self.student, self.teacher = student, teacher

        def call(self, x):
            return self.student(x)

        def train_step(self, data):
            with tf.GradientTape() as tape:
                loss = byol_loss(self.student, self.teacher, data)
            grads = tape.gradient(loss, self.student.trainable_variables)
            self.optimizer.apply(grads, self.student.trainable_variables)
            return {"tau": ema.decay.value}  # after apply: the value the update used

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            read.append(float(logs["tau"]))

    model = BYOL()
    model.compile(optimizer=opt)
    model.fit(
        X.reshape(-1, 3), batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[Record()]
    )
    _s_expected, t_expected, tau_expected = hand_written(6)
    for found, expected in zip(teacher.get_weights(), t_expected, strict=True):
        np.testing.assert_array_equal(found, expected)
    assert read == tau_expected
    assert int(opt.clock.step) == 6


def test_a_given_teacher_is_the_network_and_starts_from_its_own_weights():
    student, target = student_net(1), student_net(2)  # BYOL: the target initialized apart
    start = target.get_weights()
    opt = hs.scheduled(keras.optimizers.SGD(0.05))
    ema = hs.EMA(opt, decay=TAU, init=target, form="momentum")
    assert ema.network(student) is target
    for i in range(3):
        with tf.GradientTape() as tape:
            loss = byol_loss(student, target, X[i])
        grads = tape.gradient(loss, student.trainable_variables)
        opt.apply(grads, student.trainable_variables)
    _, t_expected, _ = hand_written(3, start_teacher=start)
    for found, expected in zip(target.get_weights(), t_expected, strict=True):
        np.testing.assert_allclose(found, expected, rtol=0, atol=0)


def test_teacher_is_saved_and_restored_with_the_model(tmp_path):
    def make():
        student = student_net()
        opt = hs.scheduled(keras.optimizers.SGD(0.05))
        student.compile(optimizer=opt, loss="mse")
        return student

    def train(student, teacher, steps):
        @tf.function
        def step(x):
            with tf.GradientTape() as tape:
                loss = byol_loss(student, teacher, x)
            grads = tape.gradient(loss, student.trainable_variables)
            student.optimizer.apply(grads, student.trainable_variables)

        for i in steps:
            step(tf.constant(X[i]))

    student = make()
    ema = hs.EMA(student.optimizer, decay=TAU, init="initial", form="momentum")
    teacher = ema.network(student)
    train(student, teacher, range(6))
    expected = teacher.get_weights()

    student = make()
    ema = hs.EMA(student.optimizer, decay=TAU, init="initial", form="momentum")
    teacher = ema.network(student)
    train(student, teacher, range(3))
    student.save(tmp_path / "student.keras")
    loaded = keras.models.load_model(tmp_path / "student.keras")
    ema = hs.EMA(loaded.optimizer, decay=TAU, init="initial", form="momentum")
    resumed = ema.network(loaded)
    np.testing.assert_array_equal(resumed.get_weights()[0], teacher.get_weights()[0])
    assert int(ema.n_averaged) == 3
    train(loaded, resumed, range(3, 6))
    for found, want in zip(resumed.get_weights(), expected, strict=True):
        np.testing.assert_array_equal(found, want)


def test_ema_arguments_are_checked_by_name():
    opt = hs.scheduled(keras.optimizers.SGD(0.05))
    with pytest.raises(ValueError, match=r"init=.*Received: init='first'"):
        hs.EMA(opt, init="first")
    with pytest.raises(ValueError, match=r"form=.*Received: form='lerp'"):
        hs.EMA(opt, form="lerp")
    ema = hs.EMA(opt, decay=0.9, form="momentum")
    with pytest.raises(TypeError, match=r"built `keras.Model`"):
        ema.network("student")
    ema.network(student_net())
    with pytest.raises(ValueError, match=r"updated by the optimizer's own update"):
        ema.update()


def test_an_ema_without_an_optimizer_on_the_loop_clock_equals_tf1():
    """A student trained by a plain Keras optimizer; the loop's clock is TF1's global step
    (incremented by the update, then read by ExponentialMovingAverage)."""
    opt = keras.optimizers.SGD(0.1)
    variables = [keras.Variable(W0), keras.Variable(B0)]
    clock = hs.Clock()
    ema = hs.EMA(decay=f"min({DECAY}, (1 + step) / (10 + step))", init="initial", clock=clock)
    ema.build(variables)

    @tf.function
    def step(g_w, g_b):
        opt.apply([g_w, g_b], variables)
        clock.advance()
        ema.update()

    for (g_w, g_b), row in zip(GRADS, tf1_run(), strict=True):
        step(tf.constant(g_w), tf.constant(g_b))
        found = [v.numpy() for v in variables] + [a.numpy() for a in ema.averages]
        for value, oracle in zip(found, row, strict=True):
            np.testing.assert_array_equal(value, oracle)
    assert int(clock.step) == len(GRADS)


@pytest.mark.parametrize("clock", ["loop", "own"])
def test_a_teacher_without_an_optimizer_follows_the_hand_written_momentum_update(clock):
    """``with clock.iteration():`` (the loop's clock) or the EMA's own clock, which each
    ``update()`` advances after averaging: the same teacher, bitwise."""
    student = student_net()
    opt = keras.optimizers.SGD(0.05)
    loop_clock = hs.Clock() if clock == "loop" else None
    ema = hs.EMA(decay=TAU, init="initial", form="momentum", clock=loop_clock)
    teacher = ema.network(student)
    iteration = loop_clock.iteration if loop_clock is not None else contextlib.nullcontext

    @tf.function
    def step(x):
        with iteration():
            with tf.GradientTape() as tape:
                loss = byol_loss(student, teacher, x)
            grads = tape.gradient(loss, student.trainable_variables)
            before = ema.decay.value
            opt.apply(grads, student.trainable_variables)
            ema.update()
            return before, ema.decay.value

    seen = [step(tf.constant(X[i])) for i in range(6)]
    s_expected, t_expected, tau_expected = hand_written(6)
    for found, expected in zip(teacher.get_weights(), t_expected, strict=True):
        np.testing.assert_array_equal(found, expected)
    for found, expected in zip(student.get_weights(), s_expected, strict=True):
        np.testing.assert_array_equal(found, expected)
    assert [float(b) for b, _ in seen] == tau_expected
    after = [float(a) for _, a in seen]
    if clock == "loop":  # inside the iteration: the value the update used
        assert after == tau_expected
    else:  # the EMA's own clock moved on when it averaged
        assert after == [float(hs.parse(TAU)(i + 1)) for i in range(6)]
    assert int(ema.clock.step) == 6


def test_an_ema_without_an_optimizer_checks_its_clock_and_its_variables():
    opt = hs.scheduled(keras.optimizers.SGD(0.05))
    with pytest.raises(ValueError, match=r"clock=.*without an optimizer.*Received: clock="):
        hs.EMA(opt, clock=hs.Clock())
    assert hs.EMA(opt, clock=opt.clock).clock is opt.clock
    with pytest.raises(TypeError, match=r"clock=.*hs.Clock.*Received: clock='step'"):
        hs.EMA(clock="step")
    with pytest.raises(ValueError, match=r"pass the variables to average"):
        hs.EMA(decay=0.9).update()
