#pragma once
// Residual<Block, Shortcut>: a residual connection, Keras's `layers.add([block(x), shortcut(x)])`.

#include "memopt/layers/add.hpp"

namespace memopt {

/// The shortcut that passes the block's input through unchanged.
struct Identity {};

/// `y = block(x) + shortcut(x)`, where `Block` and `Shortcut` are a layer or a
/// `Sequential<...>` of layers (residuals nest), and `Shortcut` is `Identity` by default. The
/// tutorial's Xception block, whose shortcut is a strided 1x1 convolution:
///
/// ```cpp
/// using Block = mo::Residual<
///     mo::Sequential<mo::Activation<mo::ReLU>, mo::SeparableConv2D<64, 3, mo::Same>,
///                    mo::BatchNormalization, mo::MaxPooling2D<3, mo::Strides<2>, mo::Same>>,
///     mo::Conv2D<64, 1, mo::Strides<2>, mo::Same>>;
/// ```
///
/// The Sequential lays it out as Keras's functional model lists it: the block's layers, then
/// the shortcut's, then an `Add` (so Keras's names, `conv2d_1`, `add`, ... follow). The two
/// outputs must have the same shape, checked at compile time with both shapes in the message.
/// The planner keeps `x` until the last of the two branches has read it and sums the two
/// gradients that reach it.
template <class Block, class Shortcut = Identity>
struct Residual {
  using block = Block;
  using shortcut = Shortcut;
};

template <class T>
inline constexpr bool is_residual_v = false;
template <class B, class S>
inline constexpr bool is_residual_v<Residual<B, S>> = true;

}  // namespace memopt
