package io.magnetar.compat.spring;

import org.junit.jupiter.api.Test;

/** Needs no server: run alone by the runner while the registries are reachable, so Maven has
 *  resolved what a test run needs before it runs offline. */
class PrepareTest {
    @Test
    void resolves() {}
}
