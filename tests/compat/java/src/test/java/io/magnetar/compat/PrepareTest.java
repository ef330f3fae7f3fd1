package io.magnetar.compat;

import org.junit.jupiter.api.Test;

/** Needs no server: the runner runs it alone before the network goes away, so that Maven has
 *  resolved everything a test run needs (Surefire's JUnit provider is resolved only when a
 *  test runs), and runs the others offline. */
class PrepareTest {
    @Test
    void resolves() {}
}
