package org.nccl4j.launch;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The job's shared secret, which authenticates every connection to the job's ports (the rendezvous and the liveness
 * channel) by challenge and response: the secret itself never crosses the wire. Each side sends a fresh random nonce;
 * each proves it holds the secret with {@code HMAC-SHA256(secret, purpose | server nonce | client nonce | side)}, so a
 * proof captured from one connection is worth nothing on another (its nonces differ), and neither side can be
 * impersonated without the secret.
 *
 * <p>Where it comes from: {@value #VARIABLE} (the secret itself, at least {@value #MIN_CHARS} characters), else
 * {@value #FILE_VARIABLE} (a file holding it, as a Kubernetes Secret mounted into the pod); {@code scripts/nccl4j-run}
 * makes a random one per launch. Under mpirun, forward it ({@code mpirun -x NCCL4J_JOB_SECRET}); under Slurm, export it
 * before {@code srun} (every task inherits the environment). Where neither is set, the ports are unauthenticated (said
 * once at INFO by whoever opens them); their other checks apply all the same.
 */
public final class JobSecret {
    /** The variable that holds the secret. */
    public static final String VARIABLE = "NCCL4J_JOB_SECRET";
    /** The variable that names a file holding the secret. */
    public static final String FILE_VARIABLE = "NCCL4J_JOB_SECRET_FILE";
    /** The shortest secret accepted. */
    public static final int MIN_CHARS = 16;
    /** The bytes of a nonce. */
    public static final int NONCE_BYTES = 32;

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final HexFormat HEX = HexFormat.of();

    private final byte[] key;

    private JobSecret(byte[] key) {
        this.key = key;
    }

    /**
     * The secret of {@code value}.
     *
     * @param value the secret, at least {@value #MIN_CHARS} characters
     * @return the secret
     * @throws IllegalArgumentException when value is null or shorter than {@value #MIN_CHARS} characters
     */
    public static JobSecret of(String value) {
        if (value == null || value.strip().length() < MIN_CHARS) {
            throw new IllegalArgumentException(VARIABLE + " must hold at least " + MIN_CHARS + " characters (got "
                    + (value == null ? "none" : value.strip().length()) + "): use a random value, e.g. "
                    + "`openssl rand -hex 32`, the same for every rank of the job");
        }
        return new JobSecret(value.strip().getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The job's secret from {@code env}: {@value #VARIABLE}, else the file {@value #FILE_VARIABLE} names; null when
     * neither is set.
     *
     * @param env the environment
     * @return the secret, or null
     * @throws IllegalArgumentException when the secret is too short, or the file cannot be read (naming it)
     */
    public static JobSecret from(Map<String, String> env) {
        return from(env::get);
    }

    /**
     * As {@link #from(Map)}, from a lookup of variables.
     *
     * @param env the value of a variable, or null
     * @return the secret, or null
     */
    public static JobSecret from(java.util.function.Function<String, String> env) {
        String v = env.apply(VARIABLE);
        if (v != null && !v.isBlank()) {
            return of(v);
        }
        String file = env.apply(FILE_VARIABLE);
        if (file == null || file.isBlank()) {
            return null;
        }
        try {
            return of(Files.readString(Path.of(file.strip()), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IllegalArgumentException(FILE_VARIABLE + "=" + file + " cannot be read (" + e + "): mount the "
                    + "job's secret there, or set " + VARIABLE, e);
        }
    }

    /**
     * The job's secret from the process's environment ({@link ProcessEnvironment}).
     *
     * @return the secret, or null when none is set
     */
    public static JobSecret fromEnvironment() {
        return from(ProcessEnvironment.liveOrJvmCopy()::get);
    }

    /**
     * Whether a variable's value must never be shown (in a trace dump, a report or a log): a secret, a token or a
     * password by its name, misspelt ones included ({@code NCCL4J_JOB_SECRET}, {@code NCCL4J_RENDEZVOUS_TOKEN}); the
     * {@code _FILE} variables, which only name where a secret lies, are shown.
     *
     * @param name a variable's name
     * @return whether its value is to be replaced by {@link #NOT_SHOWN}
     */
    public static boolean hidden(String name) {
        return name != null && !name.endsWith("_FILE") && name.toUpperCase(java.util.Locale.ROOT)
                .matches(".*(SECR|TOK|PASSW).*");
    }

    /** What is shown instead of a {@link #hidden} variable's value. */
    public static final String NOT_SHOWN = "(set, not shown)";

    /**
     * A fresh random nonce, as hex.
     *
     * @return {@value #NONCE_BYTES} random bytes in hex
     */
    public static String nonce() {
        byte[] b = new byte[NONCE_BYTES];
        RANDOM.nextBytes(b);
        return HEX.formatHex(b);
    }

    /**
     * A random secret for one launch (what {@code scripts/nccl4j-run} passes to its ranks).
     *
     * @return 32 random bytes in hex
     */
    public static String random() {
        return nonce();
    }

    /**
     * The proof that one side of a connection holds the secret.
     *
     * @param purpose what the connection is for, e.g. {@code liveness} or {@code rendezvous}
     * @param serverNonce the nonce the serving side sent
     * @param clientNonce the nonce the connecting side sent
     * @param side {@code server} or {@code client}
     * @return the proof, as hex
     */
    public String prove(String purpose, String serverNonce, String clientNonce, String side) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            byte[] p = mac.doFinal((purpose + "|" + serverNonce + "|" + clientNonce + "|" + side)
                    .getBytes(StandardCharsets.UTF_8));
            return HEX.formatHex(p);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    /**
     * Whether {@code proof} is what {@link #prove} gives for these values (compared in constant time).
     *
     * @param purpose as for {@link #prove}
     * @param serverNonce as for {@link #prove}
     * @param clientNonce as for {@link #prove}
     * @param side as for {@link #prove}
     * @param proof what the other side sent, or null
     * @return whether it proves the secret
     */
    public boolean verify(String purpose, String serverNonce, String clientNonce, String side, String proof) {
        if (proof == null) {
            return false;
        }
        return MessageDigest.isEqual(prove(purpose, serverNonce, clientNonce, side).getBytes(StandardCharsets.UTF_8),
                proof.getBytes(StandardCharsets.UTF_8));
    }

    /** {@code HMAC-SHA256(secret, data)}: the root of {@link RecordSeal}'s session keys. */
    byte[] hmac(byte[] data) {
        return hmac(key, data);
    }

    /** {@code HMAC-SHA256(key, data)}. */
    static byte[] hmac(byte[] key, byte[] data) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(data);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    @Override
    public String toString() {
        return "JobSecret[" + key.length + " bytes, not shown]";
    }
}
