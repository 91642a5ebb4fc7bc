// The README's "Using the engine" snippet as a program built against an installed relpos: a
// random linear map, a loss, and its gradient by reverse-mode autograd.
#include <cstdio>

#include "autograd/functions.h"
using namespace relpos;

int main() {
  Generator gen(0);
  Var w(randn({64, 2}, gen), /*requires_grad=*/true);
  Var x(rand({128, 2}, gen));
  Var loss = mean(relu(matmul(x, w, false, true)));
  loss.backward();  // w.grad() now holds d loss / d w
  std::printf("loss %.6f, |d loss / d w| %.6f over %lld entries\n", loss.value().item(),
              sum(abs(w.grad())).item(), static_cast<long long>(w.grad().numel()));
  return 0;
}
