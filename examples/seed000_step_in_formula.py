"""Seed 000: use the step count inside a custom update formula.

The update, for a 10x1 linear regression trained for 100 steps on fixed batches::

    coefficient(step) = step / 1000 + 0.01
    w <- w - coefficient(step) * dloss/dw          (the update at step t uses t, then t += 1)

Old (TF1 through ``tf.compat.v1``, graph mode in a private ``tf.Graph``), the seed's three
methods:

1. ``tf1_in_graph_step``: a non-trainable step variable read by the formula. The seed pairs
   the update and the increment with ``tf.group``, which orders nothing: the coefficient is
   read before or after the increment, run to run (``ordered=False`` reproduces it). The fix
   (``ordered=True``, the default) puts the increment under ``tf.control_dependencies`` of the
   update.
2. ``tf1_fed_step``: the step kept in Python and fed through a placeholder.
3. ``tf1_global_step``: ``get_or_create_global_step()`` passed to
   ``GradientDescentOptimizer(coefficient).minimize(loss, global_step=...)``, which increments
   the step after the update. (Substituted into method 1's ``tf.group``, as the seed suggests,
   it races the same way: ``tf1_in_graph_step(..., global_step=True, ordered=False)``.)

New (hyperstep):

- ``hs_step_optimizer``: ``hs.StepOptimizer`` with a user rule written like the equation.
- ``hs_scheduled``: ``hs.scheduled(keras.optimizers.SGD(), learning_rate="step / 1000 + 0.01")``
  in ``fit``.
- ``hs_at_step``: ``hs.Hyperparameter("step / 1000 + 0.01").at(step)``, the fed step.

Each function returns a ``Result``: the coefficient used at every step and the final weights.
``tests/examples/test_seed000.py`` checks that all race-free forms agree bit for bit.
Run ``python examples/seed000_step_in_formula.py`` for a short comparison.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import keras
import numpy as np

from hyperstep.backends import require_tensorflow

require_tensorflow("examples/seed000_step_in_formula.py (its tf.compat.v1 recipes)")

import tensorflow as tf  # noqa: E402

import hyperstep as hs  # noqa: E402

STEPS = 100
BATCH = 32
FEATURES = 10
EXPRESSION = "step / 1000 + 0.01"


class Data(NamedTuple):
    inputs: np.ndarray  # (steps, batch, features) float32: the batch used at each step
    labels: np.ndarray  # (steps, batch, 1) float32
    weights: np.ndarray  # (features, 1) float32: the initial weights


class Result(NamedTuple):
    coefficients: np.ndarray  # (steps,) float32: the coefficient each update used
    weights: np.ndarray  # (features, 1) float32: the weights after the last update


def make_data(steps: int = STEPS, seed: int = 0) -> Data:
    """Fixed batches of a noisy linear target, and fixed initial weights."""
    rng = np.random.RandomState(seed)
    true_weights = rng.normal(size=(FEATURES, 1))
    inputs = rng.normal(size=(steps, BATCH, FEATURES))
    labels = inputs @ true_weights + 0.1 * rng.normal(size=(steps, BATCH, 1))
    weights = rng.normal(size=(FEATURES, 1))
    return Data(inputs.astype(np.float32), labels.astype(np.float32), weights.astype(np.float32))


# ---------------------------------------------------------------------------------------------
# Old: TF1 code, run through tf.compat.v1 in a private graph (eager stays on for the caller).
# ---------------------------------------------------------------------------------------------

v1 = tf.compat.v1


def _loss(inputs: Any, labels: Any, weights: Any) -> Any:
    return tf.reduce_mean(tf.square(tf.matmul(inputs, weights) - labels))


def _session(graph: tf.Graph, inter_op_threads: int) -> Any:
    config = v1.ConfigProto(
        inter_op_parallelism_threads=inter_op_threads, intra_op_parallelism_threads=1
    )
    return v1.Session(graph=graph, config=config)


class InGraphStep(NamedTuple):
    """The pieces of method 1's graph, for running it and for inspecting its ordering."""

    graph: tf.Graph
    inputs: Any
    labels: Any
    weights: Any
    step: Any
    coefficient: Any
    update: Any  # the weight update op
    increment: Any  # the step increment op
    train_op: Any


def build_in_graph_step(
    initial_weights: np.ndarray,
    *,
    ordered: bool = True,
    global_step: bool = False,
    rounded_once: bool = False,
) -> InGraphStep:
    """Method 1 (and 3 by substitution): the formula reads a step variable in the graph.

    ``rounded_once``: ``step / 1000`` divided in float64 and rounded to float32, the
    correctly rounded quotient that Grappler's ``x * (1 / 1000)`` rewrite does not change
    (hyperstep's expressions divide so).
    """
    graph = tf.Graph()
    with graph.as_default():
        weights = v1.Variable(initial_weights)
        inputs = v1.placeholder(tf.float32, shape=[None, FEATURES])
        labels = v1.placeholder(tf.float32, shape=[None, 1])
        if global_step:
            step = v1.train.get_or_create_global_step()
        else:
            step = v1.Variable(0, trainable=False, dtype=tf.int32)
        if rounded_once:
            coefficient = tf.cast(tf.cast(step, tf.float64) / 1000.0, tf.float32) + 0.01
        else:
            coefficient = tf.cast(step, tf.float32) / 1000.0 + 0.01
        gradient = v1.gradients(_loss(inputs, labels, weights), [weights])[0]
        update = v1.assign_sub(weights, coefficient * gradient)
        if ordered:
            # The fix: the increment waits for the update, which read the step first.
            with tf.control_dependencies([update]):
                increment = v1.assign_add(step, 1)
            train_op = increment
        else:
            # The seed: "tf.group binds the two ops so they run together" -- but it orders
            # nothing, so the coefficient may read the step before or after the increment.
            increment = v1.assign_add(step, 1)
            train_op = tf.group(update, increment)
    return InGraphStep(
        graph, inputs, labels, weights, step, coefficient, update, increment, train_op
    )


def tf1_in_graph_step(
    data: Data,
    *,
    ordered: bool = True,
    global_step: bool = False,
    inter_op_threads: int = 2,
    rounded_once: bool = False,
) -> Result:
    """Method 1: an in-graph step variable (``ordered=False`` is the seed's racing form)."""
    g = build_in_graph_step(
        data.weights, ordered=ordered, global_step=global_step, rounded_once=rounded_once
    )
    coefficients = []
    with g.graph.as_default(), _session(g.graph, inter_op_threads) as sess:
        sess.run(v1.global_variables_initializer())
        for t in range(len(data.inputs)):
            # Fetching `coefficient` with the train op returns the value this update used.
            _, c = sess.run(
                [g.train_op, g.coefficient], {g.inputs: data.inputs[t], g.labels: data.labels[t]}
            )
            coefficients.append(c)
        weights = sess.run(g.weights)
    return Result(np.array(coefficients, np.float32), weights)


def tf1_fed_step(data: Data) -> Result:
    """Method 2: the step is kept in Python and fed through a placeholder."""
    graph = tf.Graph()
    with graph.as_default():
        weights = v1.Variable(data.weights)
        inputs = v1.placeholder(tf.float32, shape=[None, FEATURES])
        labels = v1.placeholder(tf.float32, shape=[None, 1])
        step_ph = v1.placeholder(tf.int32, shape=[])
        coefficient = tf.cast(step_ph, tf.float32) / 1000.0 + 0.01
        gradient = v1.gradients(_loss(inputs, labels, weights), [weights])[0]
        update = v1.assign_sub(weights, coefficient * gradient)
        coefficients = []
        with _session(graph, 2) as sess:
            sess.run(v1.global_variables_initializer())
            current_step = 0
            for t in range(len(data.inputs)):
                feed = {inputs: data.inputs[t], labels: data.labels[t], step_ph: current_step}
                _, c = sess.run([update, coefficient], feed)
                coefficients.append(c)
                current_step += 1
            final = sess.run(weights)
    return Result(np.array(coefficients, np.float32), final)


def tf1_global_step(data: Data) -> Result:
    """Method 3: ``get_or_create_global_step`` advanced by ``minimize(global_step=...)``."""
    graph = tf.Graph()
    with graph.as_default():
        weights = v1.Variable(data.weights)
        inputs = v1.placeholder(tf.float32, shape=[None, FEATURES])
        labels = v1.placeholder(tf.float32, shape=[None, 1])
        global_step = v1.train.get_or_create_global_step()
        coefficient = tf.cast(global_step, tf.float32) / 1000.0 + 0.01
        optimizer = v1.train.GradientDescentOptimizer(coefficient)
        # apply_gradients increments global_step under control_dependencies of the update.
        train_op = optimizer.minimize(
            _loss(inputs, labels, weights), var_list=[weights], global_step=global_step
        )
        coefficients = []
        with _session(graph, 2) as sess:
            sess.run(v1.global_variables_initializer())
            for t in range(len(data.inputs)):
                feed = {inputs: data.inputs[t], labels: data.labels[t]}
                _, c = sess.run([train_op, coefficient], feed)
                coefficients.append(c)
            final = sess.run(weights)
    return Result(np.array(coefficients, np.float32), final)


def tf2_eager_fed_step(data: Data) -> Result:
    """Method 2 in TF2 eager: the step kept in Python, each op run eagerly.

    The reference for eager forms: eager kernels (thread pool, vector width) may round a
    reduction differently from a one-thread TF1 session, so an eager loop is compared with
    this eager loop bit for bit, and with the session's result within float32 rounding.
    """
    weights = tf.Variable(data.weights)
    coefficients = []
    for t in range(len(data.inputs)):
        coefficient = tf.cast(t, tf.float32) / 1000.0 + 0.01
        with tf.GradientTape() as tape:
            loss = _loss(data.inputs[t], data.labels[t], weights)
        weights.assign_sub(coefficient * tape.gradient(loss, weights))
        coefficients.append(coefficient.numpy())
    return Result(np.array(coefficients, np.float32), weights.numpy())


def has_path(source: Any, target: Any) -> bool:
    """Whether the op ``target`` depends (by data or control edges) on the op ``source``."""
    seen, stack = set(), [target]
    while stack:
        op = stack.pop()
        if op is source:
            return True
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return False


# ---------------------------------------------------------------------------------------------
# New: hyperstep (TF2 eager by default; the train steps are tf.functions, as fit's are).
# ---------------------------------------------------------------------------------------------


@hs.rules.register_rule(package="seed000")
class StepScaledSGD(hs.rules.Rule):
    """The seed's formula as an update rule: ``w <- w - (step / 1000 + 0.01) * g``."""

    @staticmethod
    def coefficient(step: Any) -> Any:
        return step / 1000 + 0.01

    def update(self, variable: Any, gradient: Any, slots: Any, hp: Any, step: Any) -> Any:
        return variable - self.coefficient(step) * gradient


@hs.rules.register_rule(package="seed000")
class ScaledSGD(hs.rules.Rule):
    """``w <- w - coefficient * g``, the coefficient a hyperparameter (scheduled, settable)."""

    hyperparameters = {"coefficient": 0.01}  # noqa: RUF012 (the Rule API's class attribute)

    def update(self, variable: Any, gradient: Any, slots: Any, hp: Any, step: Any) -> Any:
        return variable - hp.coefficient * gradient


def _keras_loss(inputs: Any, labels: Any, weights: Any) -> Any:
    return keras.ops.mean(keras.ops.square(keras.ops.matmul(inputs, weights) - labels))


def hs_step_optimizer(data: Data, rule: str = "step") -> Result:
    """``hs.StepOptimizer`` in a custom loop: the seed's formula as a rule.

    ``rule="step"``: the rule reads ``step`` itself (:class:`StepScaledSGD`); each step
    records the rule's coefficient for the clock's step before the update.
    ``rule="hyperparameter"``: :class:`ScaledSGD` with ``coefficient="step / 1000 + 0.01"``;
    each step records the hyperparameter's value before the update.
    """
    if rule == "step":
        optimizer = hs.StepOptimizer(StepScaledSGD())

        def used() -> Any:
            return StepScaledSGD.coefficient(keras.ops.cast(optimizer.clock.step, "float32"))

    else:
        optimizer = hs.StepOptimizer(ScaledSGD(), coefficient=EXPRESSION)
        hyperparameter = optimizer.hyperparameters["coefficient"]

        def used() -> Any:
            return hyperparameter.value

    weights = keras.Variable(data.weights, name="weights")

    @tf.function
    def train_step(inputs: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = _keras_loss(inputs, labels, weights)
        gradients = tape.gradient(loss, [weights])
        coefficient = used()  # at step t, before the update; apply advances the clock after it
        optimizer.apply(gradients, [weights])
        return coefficient

    coefficients = [train_step(x, y) for x, y in zip(data.inputs, data.labels, strict=True)]
    return Result(np.array(coefficients, np.float32), keras.ops.convert_to_numpy(weights))


def hs_scheduled(data: Data) -> Result:
    """``hs.scheduled(keras.optimizers.SGD(), learning_rate="step / 1000 + 0.01")`` in fit."""
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=EXPRESSION)
    learning_rate = optimizer.hyperparameters["learning_rate"]
    dense = keras.layers.Dense(
        1, use_bias=False, kernel_initializer=keras.initializers.Constant(data.weights)
    )
    model = keras.Sequential([keras.Input((FEATURES,)), dense])
    model.compile(optimizer=optimizer, loss="mse")
    coefficients: list[Any] = []
    record = keras.callbacks.LambdaCallback(
        on_train_batch_begin=lambda batch, logs: coefficients.append(learning_rate.value)
    )
    model.fit(
        data.inputs.reshape(-1, FEATURES),
        data.labels.reshape(-1, 1),
        batch_size=BATCH,
        shuffle=False,
        verbose=0,
        callbacks=[record],
    )
    return Result(np.array(coefficients, np.float32), keras.ops.convert_to_numpy(dense.kernel))


def hs_at_step(data: Data) -> Result:
    """Method 2, fed step: ``hs.Hyperparameter(...).at(step)`` for a step kept in Python."""
    coefficient = hs.Hyperparameter(EXPRESSION, name="coefficient")
    weights = tf.Variable(data.weights)
    coefficients = []
    current_step = 0
    for inputs, labels in zip(data.inputs, data.labels, strict=True):
        c = coefficient.at(current_step)  # any step: the clock is neither read nor moved
        with tf.GradientTape() as tape:
            loss = _keras_loss(inputs, labels, weights)
        weights.assign_sub(c * tape.gradient(loss, weights))
        coefficients.append(c)
        current_step += 1
    return Result(np.array(coefficients, np.float32), weights.numpy())


if __name__ == "__main__":
    data = make_data()
    runs = {
        "tf1 in-graph step (ordered)": tf1_in_graph_step(data),
        "tf1 fed step": tf1_fed_step(data),
        "tf1 global_step + minimize": tf1_global_step(data),
        "tf2 eager fed step": tf2_eager_fed_step(data),
    }
    runs.update(
        {
            "hs StepOptimizer, step in rule": hs_step_optimizer(data, rule="step"),
            "hs StepOptimizer, scheduled hp": hs_step_optimizer(data, rule="hyperparameter"),
            "hs scheduled SGD in fit": hs_scheduled(data),
            "hs Hyperparameter.at(step)": hs_at_step(data),
        }
    )
    racy = [tf1_in_graph_step(data, ordered=False) for _ in range(20)]
    reference = runs["tf1 in-graph step (ordered)"]
    for name, result in runs.items():
        same = np.array_equal(result.weights, reference.weights)
        print(f"{name:32s} coefficient[-1]={result.coefficients[-1]:.4f} same weights: {same}")
    distinct = len({r.weights.tobytes() for r in racy})
    print(f"tf1 tf.group (seed, racing): {distinct} different final weights in 20 runs")
