package dev.outbox.sidecar;

import dev.outbox.DispatcherHealth;
import dev.outbox.micrometer.OutboxMetrics;
import dev.outbox.spring.OutboxHealthIndicator;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.core.userdetails.UsernameNotFoundException;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.AuthenticationEntryPoint;
import org.springframework.security.web.authentication.LoginUrlAuthenticationEntryPoint;
import org.springframework.security.web.authentication.www.BasicAuthenticationFilter;
import org.springframework.security.web.servlet.util.matcher.PathPatternRequestMatcher;
import org.springframework.security.web.util.matcher.RequestMatcher;
import org.springframework.web.filter.OncePerRequestFilter;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sidecar's web side: health contributors (per outbox, and readiness), Prometheus meters, the operator
 * credentials and the security filter chain.
 */
@Configuration(proxyBeanMethods = false)
class SidecarWebConfiguration {
    private static final Logger log = LoggerFactory.getLogger(SidecarWebConfiguration.class);
    /** The role of an authenticated operator. */
    static final String ROLE = "OPERATOR";

    /** {@code /actuator/health/outbox/<name>}: each outbox's dispatcher, as the starter reports it. */
    @Bean
    HealthContributor outbox(Outboxes outboxes) {
        Map<String, HealthContributor> byName = new LinkedHashMap<>();
        outboxes.all().forEach(o -> byName.put(o.name(), new OutboxHealthIndicator(o.dispatcher())));
        return CompositeHealthContributor.fromMap(byName);
    }

    /**
     * Part of the readiness group: ready while every dispatcher leads or stands by healthily, and while one is fenced
     * for no longer than {@code sidecar.readiness.max-fenced}; not ready while starting, fenced for longer, or closed.
     */
    @Bean
    HealthIndicator outboxReadiness(Outboxes outboxes, SidecarProperties properties) {
        return () -> {
            Health.Builder b = Health.up();
            boolean ready = true;
            for (SidecarOutbox o : outboxes.all()) {
                DispatcherHealth.Status s = o.health().status();
                String detail = s.name();
                switch (s) {
                    case LEADER, STANDBY -> { }
                    case FENCED -> {
                        var fenced = o.fencedFor().orElse(java.time.Duration.ZERO);
                        detail = "FENCED for " + fenced.toMillis() + " ms";
                        if (fenced.compareTo(properties.getReadiness().getMaxFenced()) > 0) {
                            ready = false;
                        }
                    }
                    case STARTING, CLOSED -> ready = false;
                }
                b.withDetail(o.name(), detail);
            }
            return ready ? b.build() : b.status(Status.OUT_OF_SERVICE).build();
        };
    }

    /** Every outbox's meters, tagged {@code outbox=<name>}. */
    @Bean
    OutboxMeters outboxMeters(Outboxes outboxes) {
        return new OutboxMeters(outboxes);
    }

    /** The dispatchers' meters; closed with the context. */
    static final class OutboxMeters implements MeterBinder, AutoCloseable {
        private final List<OutboxMetrics> metrics = new ArrayList<>();

        OutboxMeters(Outboxes outboxes) {
            outboxes.all().forEach(o -> metrics.add(new OutboxMetrics(o.dispatcher(), o.name())));
        }

        @Override
        public void bindTo(MeterRegistry registry) {
            metrics.forEach(m -> m.bindTo(registry));
        }

        @Override
        public void close() {
            metrics.forEach(OutboxMetrics::close);
        }
    }

    @Bean
    ParkedOperations parkedOperations(Outboxes outboxes) {
        return new ParkedOperations(outboxes);
    }

    @Bean
    InboxFailures inboxFailures(Inboxes inboxes) {
        return new InboxFailures(inboxes);
    }

    /**
     * The configured operator credentials, secrets read.
     *
     * @throws SidecarConfigException if they are incomplete
     */
    static OperatorCredentials operatorCredentials(SidecarProperties properties) {
        SidecarOperatorProperties o = properties.getOperator();
        Secrets secrets = new Secrets();
        String password = secrets.read("sidecar.operator.password", o.getPassword(), "sidecar.operator.password-file",
                o.getPasswordFile());
        String token = secrets.read("sidecar.operator.token", o.getToken(), "sidecar.operator.token-file",
                o.getTokenFile());
        if (o.getUsername() != null && (password == null || password.isEmpty())) {
            throw new SidecarConfigException("sidecar.operator.password", null, "sidecar.operator.username is set:"
                    + " set its password too (or password-file)", null);
        }
        if (o.getUsername() == null && password != null) {
            throw new SidecarConfigException("sidecar.operator.username", null, "a password is set: set the user"
                    + " name too", null);
        }
        if (token != null && token.length() < 16) {
            throw new SidecarConfigException("sidecar.operator.token", token, "at least 16 characters", null);
        }
        return new OperatorCredentials(o.getUsername(), password, token);
    }

    /** Who may use the operator API and console; both off when neither user nor token is configured. */
    record OperatorCredentials(String username, String password, String token) {
        boolean enabled() {
            return username != null || token != null;
        }

        /** Says whether the API and console are on, and for whom (never a secret). */
        void log() {
            log.info(enabled() ? "Operator API and console on: {}" : "Operator API and console off: {}",
                    enabled() ? (username != null ? "user '" + username + "'" : "") + (username != null
                            && token != null ? " and " : "") + (token != null ? "a bearer token" : "")
                            : "no sidecar.operator credentials configured");
        }

        @Override
        public String toString() {
            return "OperatorCredentials{username=" + username + "}";
        }
    }

    @Bean
    UserDetailsService operatorUsers(OperatorCredentials c) {
        if (c.username() == null) {
            return name -> {
                throw new UsernameNotFoundException("no operator user is configured");
            };
        }
        // The password is compared as configured ({noop}): it is held in this process's memory either way.
        return new InMemoryUserDetailsManager(User.withUsername(c.username()).password("{noop}" + c.password())
                .roles(ROLE).build());
    }

    /**
     * Actuator endpoints are open (they are on the management address, localhost by default); the API and the
     * console need an operator: a login form (the console), HTTP basic or a bearer token (the API). Every
     * state-changing request needs the CSRF token, except one carrying a bearer token, which a browser never adds
     * by itself, and an API request carrying no credential at all, which is answered 401 (see
     * {@link OperatorAuthentication}).
     */
    @Bean
    SecurityFilterChain sidecarSecurity(HttpSecurity http, OperatorCredentials c) throws Exception {
        PathPatternRequestMatcher.Builder paths = PathPatternRequestMatcher.withDefaults();
        http.authorizeHttpRequests(a -> {
            a.requestMatchers(paths.matcher("/actuator/**")).permitAll();
            if (c.enabled()) {
                a.requestMatchers(paths.matcher("/login"), paths.matcher("/error")).permitAll();
                a.requestMatchers(paths.matcher("/"), paths.matcher("/api/**"), paths.matcher("/console"),
                        paths.matcher("/console/**")).hasRole(ROLE);
            }
            a.anyRequest().denyAll();
        });
        AuthenticationEntryPoint unauthorized = OperatorAuthentication.api(c);
        if (c.username() != null) {
            http.formLogin(f -> f.defaultSuccessUrl("/console", true));
            http.httpBasic(b -> b.realmName(OperatorAuthentication.REALM).authenticationEntryPoint(unauthorized));
            http.logout(l -> l.logoutSuccessUrl("/login?logout"));
        }
        // Without credentials: the API answers 401, the console sends a browser to its login form. (Registered as
        // defaults, not as the entry point: a custom entry point would turn off the generated login page.)
        http.exceptionHandling(e -> {
            e.accessDeniedHandler(OperatorAuthentication.denied());
            e.defaultAuthenticationEntryPointFor(unauthorized, paths.matcher("/api/**"));
            if (c.username() != null) {
                AuthenticationEntryPoint login = new LoginUrlAuthenticationEntryPoint("/login");
                e.defaultAuthenticationEntryPointFor(login, paths.matcher("/console"));
                e.defaultAuthenticationEntryPointFor(login, paths.matcher("/console/**"));
                e.defaultAuthenticationEntryPointFor(login, paths.matcher("/"));
            }
        });
        if (c.token() != null) {
            http.addFilterBefore(new BearerTokenFilter(c), BasicAuthenticationFilter.class);
        }
        RequestMatcher api = paths.matcher("/api/**");
        http.csrf(csrf -> csrf.ignoringRequestMatchers(BearerTokenFilter::hasBearer,
                r -> api.matches(r) && OperatorAuthentication.withoutCredentials(r)));
        return http.build();
    }

    /** Authenticates {@code Authorization: Bearer <token>} against the configured token. Thread-safe. */
    static final class BearerTokenFilter extends OncePerRequestFilter {
        private final OperatorCredentials credentials;
        private final byte[] token;

        BearerTokenFilter(OperatorCredentials credentials) {
            this.credentials = credentials;
            this.token = credentials.token().getBytes(StandardCharsets.UTF_8);
        }

        static boolean hasBearer(HttpServletRequest request) {
            String h = request.getHeader("Authorization");
            return h != null && h.regionMatches(true, 0, "Bearer ", 0, 7);
        }

        @Override
        protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
                throws ServletException, IOException {
            if (hasBearer(request)) {
                byte[] given = request.getHeader("Authorization").substring(7).strip()
                        .getBytes(StandardCharsets.UTF_8);
                if (!MessageDigest.isEqual(given, token)) {
                    OperatorAuthentication.badToken(response, credentials);
                    return;
                }
                SecurityContextHolder.getContext().setAuthentication(UsernamePasswordAuthenticationToken.authenticated(
                        "token", null, AuthorityUtils.createAuthorityList("ROLE_" + ROLE)));
            }
            chain.doFilter(request, response);
        }
    }
}
